// SPDX-License-Identifier: GPL-2.0
/*
 * The ORC tables' addresses from the kernel's kallsyms_lookup_name (a
 * syscall program, bpf/orcfind.bpf.c), not from /proc/kallsyms: the same
 * table, but the helper is not hidden by kptr_restrict=2 (which zeroes every
 * address of /proc/kallsyms even for root), and the sampler, which reads no
 * kallsyms at start-up, is spared the kernel formatting 100k+ lines (40 ms).
 * Either way it is the kernel's own answer, nothing another process writes.
 */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "orctables.h"
#include "orcfind.skel.h"

/* orc_syms' order in bpf/orcfind.bpf.c. */
enum orc_sym { ORC_IP, ORC_IP_END, ORC_RULES, ORC_RULES_END, ORC_STEXT, ORC_ETEXT, ORC_RET_HANDLER, ORC_RETHOOK };

/* Whether the symbols describe one table of n rules: an int and 6 bytes each, in the kernel's text range. */
static int orc_check(const __u64 *a, struct orc_tables *t)
{
	__u64 n = (a[ORC_IP_END] - a[ORC_IP]) / 4;

	if (!a[ORC_IP] || a[ORC_IP_END] <= a[ORC_IP] || (a[ORC_IP_END] - a[ORC_IP]) % 4 || !a[ORC_RULES] ||
	    a[ORC_RULES_END] - a[ORC_RULES] != n * 6 || !a[ORC_STEXT] || a[ORC_ETEXT] <= a[ORC_STEXT] ||
	    n >= 1u << 24)
		return -ENOENT;
	t->ip = a[ORC_IP];
	t->ip_end = a[ORC_IP_END];
	t->rules = a[ORC_RULES];
	t->n = n;
	t->stext = a[ORC_STEXT];
	t->etext = a[ORC_ETEXT];
	t->tramp[0] = a[ORC_RET_HANDLER];
	t->tramp[1] = a[ORC_RETHOOK];
	return 0;
}

static int orc_ask(struct orc_tables *t)
{
	LIBBPF_OPTS(bpf_test_run_opts, o);
	struct orcfind_bpf *skel;
	int e;

	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_SYSCALL, BPF_FUNC_kallsyms_lookup_name, NULL) != 1)
		return -EOPNOTSUPP;
	skel = orcfind_bpf__open_and_load();
	if (!skel)
		return -errno;
	e = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.orc_find), &o);
	if (e)
		e = -errno;
	else
		e = orc_check(skel->bss->orc_syms, t);
	orcfind_bpf__destroy(skel);
	return e;
}

int orc_tables_find(struct orc_tables *t)
{
	/* The sampler's and the off-CPU source's: one question to the kernel per run, whose text does not move. */
	static struct orc_tables found;
	static int err = 1;

	if (err > 0) {
		err = orc_ask(&found);
		if (err) {
			memset(&found, 0, sizeof(found));
			pr_debug("kernel chains are the kernel's walk: the ORC tables were not found (%s)", strerror(-err));
		}
	}
	*t = found;
	return err;
}
