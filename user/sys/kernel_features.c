// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "events.h"
#include "kernel_features.h"
#include "host.h"
#include "libbpf_setup.h"
#include "perf_events.h"
#include "calibrate.skel.h"

#ifndef TRACEFS_MAGIC
#define TRACEFS_MAGIC 0x74726163
#endif

static bool is_tracefs(const char *path)
{
	struct statfs st;
	char events[96];

	if (statfs(path, &st) || (st.f_type != TRACEFS_MAGIC && st.f_type != DEBUGFS_MAGIC))
		return false;
	snprintf(events, sizeof(events), "%s/events", path);
	return access(events, F_OK) == 0;
}

int features_tracefs(char *path, size_t len, bool *mounted)
{
	static const char *const where[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

	if (mounted)
		*mounted = false;
	for (size_t i = 0; i < 2; i++)
		if (is_tracefs(where[i])) {
			snprintf(path, len, "%s", where[i]);
			return 0;
		}
	/* Not mounted at boot on some systems: as root we can fix that. */
	if (mount("nodev", where[0], "tracefs", 0, NULL) == 0 && is_tracefs(where[0])) {
		if (mounted)
			*mounted = true;
		snprintf(path, len, "%s", where[0]);
		return 0;
	}
	return -errno ?: -ENOENT;
}

/* Loads and attaches one calibration program; 0 or the -errno of the step that failed. */
static int try_prog(const char *name)
{
	struct calibrate_bpf *skel;
	struct bpf_program *prog, *want = NULL;
	struct bpf_link *link;
	int err;

	libbpf_setup_quiet(true);
	skel = calibrate_bpf__open();
	if (!skel) {
		err = -errno;
		goto cleanup;
	}
	bpf_object__for_each_program(prog, skel->obj) {
		bool on = !strcmp(bpf_program__name(prog), name);

		bpf_program__set_autoload(prog, on);
		if (on)
			want = prog;
	}
	err = calibrate_bpf__load(skel);
	if (err)
		goto cleanup;
	link = bpf_program__attach(want);
	if (!link) {
		err = -errno;
		goto cleanup;
	}
	bpf_link__destroy(link);
cleanup:
	calibrate_bpf__destroy(skel);
	libbpf_setup_quiet(false);
	return err;
}

int features_try_attach(const char *prog)
{
	return try_prog(prog);
}

int features_tp_nargs(const char *tp)
{
	char name[128];
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t;
	int id, n = -ENOENT;

	if (!btf)
		return -errno;
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	/* typedef void (*btf_trace_<tp>)(void *__data, <the tracepoint's arguments>); */
	id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	t = t ? btf__type_by_id(btf, t->type) : NULL;
	t = t && btf_is_ptr(t) ? btf__type_by_id(btf, t->type) : NULL;
	if (t && btf_is_func_proto(t) && btf_vlen(t) > 0)
		n = btf_vlen(t) - 1;
	btf__free(btf);
	return n;
}

/* task_struct has a member `name` in the kernel's BTF. */
static bool task_has_member(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t;
	const struct btf_member *m;
	bool found = false;
	int id;

	if (!btf)
		return false;
	id = btf__find_by_name_kind(btf, "task_struct", BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	m = t ? btf_members(t) : NULL;
	for (int i = 0; t && i < btf_vlen(t) && !found; i++)
		found = !strcmp(btf__name_by_offset(btf, m[i].name_off), name);
	btf__free(btf);
	return found;
}

bool features_sched_accounts(void)
{
	/* The file is there exactly when the kernel keeps sched_info (CONFIG_SCHED_INFO). */
	return access("/proc/self/schedstat", R_OK) == 0 && task_has_member("sched_info");
}

bool features_split_stamps(void)
{
	const char *force = getenv("SPANPERF_SCHED_SPLIT");

	return (force && !strcmp(force, "stamps")) || !features_sched_accounts();
}

void features_probe(struct sp_features *f)
{
	struct event_spec cycles, clock;
	struct int_list cpus = {};
	char path[128];

	memset(f, 0, sizeof(*f));
	f->btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	event_default_cycles(&cycles);
	event_cpu_clock(&clock);
	if (!host_online_cpus(&cpus)) {
		f->pmu_err = pe_try_open(&cycles.attr, cpus.v[0]);
		clock.attr.use_clockid = 1;
		clock.attr.clockid = CLOCK_MONOTONIC;
		f->use_clockid = pe_try_open(&clock.attr, cpus.v[0]) == 0;
		int_list_free(&cpus);
	} else {
		f->pmu_err = -ENODEV;
	}
	f->perf_event_prog = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, NULL) == 1;
	f->ringbuf = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1;
	f->task_storage = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
	f->uprobe = access("/sys/bus/event_source/devices/uprobe/type", R_OK) == 0;
	f->tracefs_err = features_tracefs(f->tracefs_path, sizeof(f->tracefs_path), &f->tracefs_mounted);
	if (!f->tracefs_err) {
		snprintf(path, sizeof(path), "%s/events/syscalls", f->tracefs_path);
		f->syscall_tps = access(path, F_OK) == 0;
	}
	/* The file is there exactly when the kernel keeps sched_info (CONFIG_SCHED_INFO). */
	f->sched_info = access("/proc/self/schedstat", R_OK) == 0;
	f->sched_waking = features_tp_nargs("sched_waking") >= 1;
	f->sched_accounts = f->sched_info && task_has_member("sched_info");
	f->split_stamps = features_split_stamps();
	f->kprobe_err = try_prog("calib_kprobe");
	f->fentry_err = f->btf ? try_prog("calib_fentry") : -ENOENT;
	f->tp_btf_err = f->btf ? try_prog("calib_tp_btf") : -ENOENT;
	f->raw_tp_err = try_prog("calib_raw_tp");
}

static const char *yes(int err, char *buf, size_t len)
{
	if (!err)
		return "yes";
	snprintf(buf, len, "no (%s)", strerror(-err));
	return buf;
}

void features_print(const struct sp_features *f, FILE *out)
{
	char b1[96], b2[96];

	fprintf(out, "Kernel features\n");
	fprintf(out, "  %-26s %s\n", "BTF (/sys/kernel/btf)", f->btf ? "yes" : "no");
	fprintf(out, "  %-26s %s\n", "hardware PMU (cycles)", yes(f->pmu_err, b1, sizeof(b1)));
	fprintf(out, "  %-26s %s\n", "kprobes", yes(f->kprobe_err, b1, sizeof(b1)));
	fprintf(out, "  %-26s %s\n", "fentry/fexit", yes(f->fentry_err, b1, sizeof(b1)));
	fprintf(out, "  %-26s %s\n", "tp_btf", yes(f->tp_btf_err, b1, sizeof(b1)));
	fprintf(out, "  %-26s %s\n", "raw_tp", yes(f->raw_tp_err, b1, sizeof(b1)));
	fprintf(out, "  %-26s %s\n", "perf_event programs", f->perf_event_prog ? "yes" : "no");
	fprintf(out, "  %-26s %s\n", "uprobes", f->uprobe ? "yes" : "no");
	fprintf(out, "  %-26s %s\n", "BPF ring buffer", f->ringbuf ? "yes" : "no");
	fprintf(out, "  %-26s %s\n", "task-local storage", f->task_storage ? "yes" : "no");
	fprintf(out, "  %-26s %s\n", "use_clockid (MONOTONIC)", f->use_clockid ? "yes" : "no");
	if (!f->tracefs_err)
		fprintf(out, "  %-26s %s%s\n", "tracefs", f->tracefs_path,
			f->tracefs_mounted ? " (mounted by spanperf)" : "");
	else
		fprintf(out, "  %-26s %s\n", "tracefs", yes(f->tracefs_err, b1, sizeof(b1)));
	fprintf(out, "  %-26s %s\n", "syscall tracepoints", f->syscall_tps ? "yes" : "no");
	fprintf(out, "  %-26s %s\n", "sched_info (run_delay)", f->sched_info ? "yes" : "no (CONFIG_SCHED_INFO off)");

	fprintf(out, "\nChoices\n");
	fprintf(out, "  %-26s %s\n", "sampling event",
		!f->pmu_err ? "cycles (hardware PMU)"
		: event_errno_means_no_pmu(f->pmu_err) ? "cpu-clock (no hardware PMU here)"
						       : "none: hardware cycles failed unexpectedly");
	fprintf(out, "  %-26s %s\n", "sample delivery",
		f->perf_event_prog ? "perf ring, BPF program as filter and per-thread counter"
				   : "none: perf_event BPF programs unsupported");
	fprintf(out, "  %-26s %s\n", "context switch hook",
		!f->tp_btf_err ? "tp_btf/sched_switch" : !f->raw_tp_err ? "raw_tp/sched_switch" : "none");
	if (!f->kprobe_err)
		snprintf(b1, sizeof(b1), "kprobe/kretprobe");
	else if (!f->fentry_err)
		snprintf(b1, sizeof(b1), "fentry/fexit (kprobes: %s)", strerror(-f->kprobe_err));
	else
		snprintf(b1, sizeof(b1), "none: kprobes %s, fentry %s", strerror(-f->kprobe_err),
			 strerror(-f->fentry_err));
	fprintf(out, "  %-26s %s\n", "kernel function spans", b1);
	fprintf(out, "  %-26s %s\n", "user function spans",
		f->uprobe ? "uprobe/uretprobe" : "none: no uprobe PMU (CONFIG_UPROBE_EVENTS)");
	snprintf(b2, sizeof(b2), "%s",
		 f->syscall_tps ? "tracepoints syscalls/sys_enter_X, sys_exit_X"
		 : !f->raw_tp_err ? "raw_tp sys_enter/sys_exit filtered by id"
				  : "none");
	fprintf(out, "  %-26s %s\n", "syscall spans", b2);
	fprintf(out, "  %-26s %s\n", "span wall-time split",
		!f->split_stamps ? "scheduler accounts: sum_exec_runtime and run_delay at the edges, D time at switches"
		: f->sched_accounts ? "stamps at sched_switch and sched_wakeup (forced by SPANPERF_SCHED_SPLIT=stamps)"
				    : "stamps at sched_switch and sched_wakeup (no sched_info: CONFIG_SCHED_INFO off)");
	fprintf(out, "  %-26s %s\n", "off-CPU wakers",
		f->sched_waking && (!f->tp_btf_err || !f->raw_tp_err)
			? "sched_waking; interrupts told by the entry on the waker's kernel stack"
			: "none: no sched_waking tracepoint");
}
