// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kernel_features.h"
#include "libbpf_setup.h"
#include "log.h"
#include "target.h"
#include "util.h"

/* The target programs of bpf/helpers.bpf.h, by name: every object with the filter map has them. */
static const char *const progs[2][2] = {
	{ "target_fork_btf", "target_exit_btf" },
	{ "target_fork_raw", "target_exit_raw" },
};

bool target_follows_cmd(char **cmd, bool all_cpus, const struct int_list *pids, const struct int_list *tids,
			const struct int_list *cpus)
{
	return cmd && !all_cpus && !pids->n && !tids->n && !cpus->n;
}

void target__init(struct target *t, const struct int_list *pids, const struct int_list *tids, bool follow_cmd,
		  __u64 max_procs, bool raw_tp)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	t->max_procs = max_procs;
	t->mode = pids->n ? SP_FILTER_PID : tids->n ? SP_FILTER_TID : follow_cmd ? SP_FILTER_TREE : SP_FILTER_NONE;
	t->ids = pids->n ? pids : tids->n ? tids : NULL;
	/* tp_btf (5.5+) reads the tasks' fields directly; raw_tp is the older twin. */
	t->raw_tp = t->mode == SP_FILTER_TREE && (raw_tp || features_try_attach("calib_tp_btf") != 0);
}

int target__prepare(struct target *t, struct bpf_object *obj, struct bpf_map *filter)
{
	int e;

	if (!t || t->mode == SP_FILTER_NONE)
		return bpf_map__set_max_entries(filter, 1);
	if (t->fd >= 0)
		return bpf_map__reuse_fd(filter, t->fd);
	if (t->mode != SP_FILTER_TREE)
		return bpf_map__set_max_entries(filter, t->ids->n);
	e = bpf_map__set_max_entries(filter, t->max_procs);
	for (int i = 0; i < 2 && !e; i++) {
		struct bpf_program *p = bpf_object__find_program_by_name(obj, progs[t->raw_tp][i]);

		e = p ? bpf_program__set_autoload(p, true) : -ENOENT;
	}
	return e;
}

int target__loaded(struct target *t, struct bpf_object *obj, struct bpf_map *filter)
{
	if (!t || t->mode == SP_FILTER_NONE || t->fd >= 0)
		return 0;
	t->fd = bpf_map__fd(filter);
	t->owner = obj;
	for (int i = 0; t->ids && i < t->ids->n; i++) {
		__u32 key = t->ids->v[i];
		__u8 one = 1;

		if (bpf_map_update_elem(t->fd, &key, &one, BPF_ANY))
			return -errno;
	}
	return 0;
}

int target__follow(struct target *t, pid_t cmd)
{
	__u32 key = cmd;
	__u8 live = SP_TARGET_LIVE;
	int e;

	if (t->mode != SP_FILTER_TREE)
		return 0;
	if (bpf_map_update_elem(t->fd, &key, &live, BPF_ANY)) {
		e = -errno;
		pr_err("cannot add the command to the BPF filter: %s", strerror(-e));
		return e;
	}
	for (int i = 0; i < 2; i++) {
		struct bpf_program *p = bpf_object__find_program_by_name(t->owner, progs[t->raw_tp][i]);

		t->links[i] = p ? bpf_program__attach(p) : NULL;
		if (!t->links[i]) {
			e = p ? -errno : -ENOENT;
			pr_err("cannot follow the command's processes (%s on sched_process_%s): %s",
			       t->raw_tp ? "raw_tp" : "tp_btf", i ? "exit" : "fork", libbpf_explain(e));
			return e;
		}
	}
	return 0;
}

bool target__has(const struct target *t, __u32 pid)
{
	__u8 v;

	if (!t || t->mode == SP_FILTER_NONE)
		return true;
	return !bpf_map_lookup_elem(t->fd, &pid, &v);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int target__pids(const struct target *t, struct int_list *out)
{
	__u32 key, next, *prev = NULL;
	size_t cap = 0;

	memset(out, 0, sizeof(*out));
	while (!bpf_map_get_next_key(t->fd, prev, &next)) {
		key = next;
		prev = &key;
		if (array_reserve((void **)&out->v, &cap, out->n, sizeof(int))) {
			int_list_free(out);
			return -ENOMEM;
		}
		out->v[out->n++] = key;
	}
	sort_n(out->v, out->n, sizeof(int), cmp_int);
	return 0;
}

void target__exited(struct target *t, __u32 pid)
{
	if (t->mode != SP_FILTER_TREE || t->drop_at_exit)
		return;
	if (array_reserve((void **)&t->exited[1], &t->cap_exited[1], t->nr_exited[1], sizeof(__u32)))
		return; /* kept in the map, which only costs room */
	t->exited[1][t->nr_exited[1]++] = pid;
}

void target__pass(struct target *t)
{
	__u32 *older = t->exited[0];
	size_t cap = t->cap_exited[0];

	for (size_t i = 0; i < t->nr_exited[0]; i++) {
		__u32 pid = older[i];
		__u8 v;

		/* Still gone: a pid forked again since is live, or someone else's (no longer in the map). */
		if (!bpf_map_lookup_elem(t->fd, &pid, &v) && v == SP_TARGET_GONE && !bpf_map_delete_elem(t->fd, &pid))
			t->pruned++;
	}
	t->exited[0] = t->exited[1];
	t->nr_exited[0] = t->nr_exited[1];
	t->cap_exited[0] = t->cap_exited[1];
	t->exited[1] = older;
	t->nr_exited[1] = 0;
	t->cap_exited[1] = cap;
}

__u64 target__full(const struct target *t, int stats_fd)
{
	return t->mode == SP_FILTER_TREE ? bpf_percpu_sum(stats_fd, SP_STAT_TARGET_FULL) : 0;
}

void target__free(struct target *t)
{
	if (!t)
		return;
	for (int i = 0; i < 2; i++) {
		bpf_link__destroy(t->links[i]);
		t->links[i] = NULL;
	}
	for (int i = 0; i < 2; i++) {
		free(t->exited[i]);
		t->exited[i] = NULL;
		t->nr_exited[i] = t->cap_exited[i] = 0;
	}
}
