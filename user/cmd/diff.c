// SPDX-License-Identifier: GPL-2.0
/* spanperf diff: argv into struct diff_opts (report/profile_diff.h), then the comparison. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd_opts.h"
#include "commands.h"
#include "log.h"
#include "profile_diff.h"

void diff_usage(FILE *out)
{
	fprintf(out,
		"Usage: spanperf diff BASELINE NEW [--sort KEYS] [--format text|json]\n"
		"                     [--flamegraph FILE] [--folded] [--percent-limit P]\n\n"
		"Compares two recordings as perf diff does: each row's share of the\n"
		"baseline's samples and how its share in NEW differs, biggest change first;\n"
		"rows only in the baseline last.  Recordings of other hosts, rates or events\n"
		"compare on their shares, and diff says what differs.\n\n"
		"  -s, --sort KEYS        comma list of comm, pid, tid, dso, sym, srcline (default dso,sym)\n"
		"      --format FMT       text (default) or json: one object per row\n"
		"      --percent-limit P  leave out rows under P percent in both files\n"
		"      --folded           each stack with its two counts, \"stack BASELINE NEW\"\n"
		"                         (flamegraph.pl's difffolded.pl form), to stdout\n"
		"      --flamegraph SVG   write a differential flame graph: NEW's widths, each\n"
		"                         frame red as its share grew, blue as it shrank\n"
		"  -v, --verbose          more messages\n"
		"  -q, --quiet            errors only\n"
		"  -h, --help             this text\n\n"
		"Examples:\n"
		"  spanperf diff old.data new.data\n"
		"  spanperf diff old.data new.data --sort sym --format json\n"
		"  spanperf diff old.data new.data --flamegraph diff.svg\n");
}

static int opt_sort(const char *arg, void *opts, char *err, size_t errlen)
{
	struct diff_args *a = opts;

	if (parse_sort_keys(arg, &a->o.table))
		return set_errorf(err, errlen, -EINVAL, "--sort '%s' is not a list of comm, pid, tid, dso, sym and srcline",
				  arg);
	return 0;
}

static int opt_format(const char *arg, void *opts, char *err, size_t errlen)
{
	struct diff_args *a = opts;

	if (strcmp(arg, "text") && strcmp(arg, "json"))
		return set_errorf(err, errlen, -EINVAL, "--format '%s' is neither text nor json", arg);
	a->o.table.json = !strcmp(arg, "json");
	return 0;
}

static int opt_percent(const char *arg, void *opts, char *err, size_t errlen)
{
	struct diff_args *a = opts;

	return cmd_percent_limit(arg, &a->o.table.min_pct, err, errlen);
}

#define D(f) offsetof(struct diff_args, f)
static const struct opt_def diff_defs[] = {
	{ .name = "sort", .letter = 's', .type = OPT_T_FN, .fn = opt_sort },
	{ .name = "format", .type = OPT_T_FN, .fn = opt_format },
	{ .name = "percent-limit", .type = OPT_T_FN, .fn = opt_percent },
	{ .name = "folded", .type = OPT_T_FLAG, .off = D(o.folded) },
	{ .name = "flamegraph", .type = OPT_T_STR, .off = D(o.flame), .bad = "needs a file name" },
	OPT_DEFS_VERBOSITY(struct diff_args),
	{}
};
#undef D

int diff_parse_args(int argc, char **argv, struct diff_args *a, char *err, size_t errlen)
{
	uint64_t seen;
	int e;

	memset(a, 0, sizeof(*a));
	parse_sort_keys("dso,sym", &a->o.table);
	e = opts_parse(diff_defs, 0, argc, argv, a, &seen, diff_usage, err, errlen);
	if (e)
		return e;
	if (argc - optind != 2)
		return set_errorf(err, errlen, -EINVAL, "%s: diff compares two files, BASELINE and NEW",
				  argc - optind < 2 ? "too few files" : "too many files");
	a->o.baseline = argv[optind];
	a->o.input = argv[optind + 1];
	/* The keys that pair rows across files; the others (OTel ids, wakers) name one recording's things. */
	for (int i = 0; i < a->o.table.nr_keys; i++)
		if (a->o.table.keys[i] > SK_SYM && a->o.table.keys[i] != SK_SRCLINE)
			return set_errorf(err, errlen, -EINVAL,
					  "--sort: diff pairs rows by comm, pid, tid, dso, sym and srcline only");
	if (a->o.folded && a->o.table.json)
		return set_errorf(err, errlen, -EINVAL, "--folded writes stacks: use it without --format json");
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_args a;
	char err[512];
	int e;

	sp_prog = "spanperf diff";
	e = diff_parse_args(argc, argv, &a, err, sizeof(err));
	if (e)
		return cmd_parse_failed(e, err);
	sp_verbose = a.verbose;
	return diff_run(&a.o);
}
