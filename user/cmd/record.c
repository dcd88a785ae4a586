// SPDX-License-Identifier: GPL-2.0
/*
 * spanperf record: argv to struct record_opts, the --span texts parsed;
 * the recorder (record/record.c) does the rest.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_opts.h"
#include "commands.h"
#include "log.h"
#include "parse.h"
#include "pprof_dir.h"
#include "record.h"

#define MAX_FREQ 1000000   /* the kernel caps it lower (perf_event_max_sample_rate) */

void record_usage(FILE *out)
{
	fprintf(out,
		"Usage: spanperf record [options] [-- CMD [ARGS...]]\n"
		"\n"
		"Samples every CPU with a BPF program on each sampling event and writes a\n"
		"perf.data that perf report and perf script read.  With -- CMD, as perf: CMD\n"
		"and every process it forks or execs, filtered in BPF (-a: the whole host\n"
		"while CMD runs).\n"
		"\n"
		"  -a, --all-cpus         the whole host (the default without CMD; with it, while it runs)\n"
		"  -p, --pid PID,..       keep only samples of these processes (BPF filter)\n"
		"  -t, --tid TID,..       keep only samples of these threads (BPF filter)\n"
		"  -C, --cpu CPUS         sample only these CPUs, e.g. 0-3,8\n"
		"  -F, --freq HZ          samples per second per CPU (default 999)\n"
		"  -c, --count PERIOD     sample every PERIOD events instead of -F\n"
		"  -e, --event EVENT,..   sampling event (default cycles, else cpu-clock)\n"
		"  -g                     record kernel and user call chains: ehframe, or fp where the\n"
		"                         kernel lacks what ehframe needs (Linux 5.17+; -v says so)\n"
		"  --call-graph fp|dwarf[,SIZE]|ehframe\n"
		"                         fp: frame pointers, as perf's -g; dwarf: copy SIZE bytes of\n"
		"                         user stack (default 8192) and the registers, unwound by report\n"
		"                         with the files' CFI; ehframe: user stacks unwound in BPF from\n"
		"                         the files' .eh_frame (frame pointers where no table covers the\n"
		"                         code), written as ordinary call chains that perf reads; -g's\n"
		"                         default since its whole cost per sample (the workload's loss\n"
		"                         and the recorder's CPU) is 0.8-1.1x fp's: spanperf-call-graphs(7)\n"
		"      --span SPEC        mark spans with a probe pair (repeatable)\n"
		"      --span-min-us N    drop spans shorter than N microseconds, in BPF\n"
		"      --span-counters EV,..  counters spans carry (default task-clock,\n"
		"                         context-switches: both counted without counter reads)\n"
		"      --span-buffer KB   the span ring buffer (default 8192)\n"
		"      --otel             spans from the OpenTelemetry thread context that\n"
		"                         processes publish (otel_thread_ctx_v1, OTEP 4947)\n"
		"      --raw-tp           raw tracepoints even where better ones work: syscall\n"
		"                         spans on raw_syscalls, the switch hook on raw_tp\n"
		"      --off-cpu          also record time blocked, with the stack that blocked, as\n"
		"                         samples of offcpu-time (period = ns off CPU), as perf does,\n"
		"                         and every switch-out as --sched does\n"
		"      --off-cpu-thresh MS  blocks this long or longer are written one by one,\n"
		"                         shorter ones summed per thread and stack (default 500,\n"
		"                         0 with --span or --otel: spans need each block's time)\n"
		"      --off-cpu-entries N  stacks and sums kept in BPF (default 16384)\n"
		"      --no-wakers        off-CPU blocks without who woke them (no sched_waking program)\n"
		"      --sched            also record every switch-out of the threads watched, with\n"
		"                         its state and run-queue account and no stack (cheap):\n"
		"                         what annotate --spans needs to split external spans\n"
		"      --no-sched-split   spans without the split of their wall time (runq, sleep,\n"
		"                         blocked): what the split costs, for comparison\n"
		"  -d, --duration SECS    stop after SECS seconds\n"
		"  -o, --output FILE      output file (default perf.data; the old one becomes FILE.old)\n"
		"      --switch-output[=signal|SIZE|TIME]\n"
		"                         a new file on SIGUSR2 (the default), when the data reach\n"
		"                         SIZE (B/K/M/G, e.g. 100M) or every TIME (s/m/h/d, e.g. 30s);\n"
		"                         each is complete on its own, named FILE.YYYYMMDDHHMMSScc\n"
		"      --switch-max-files N  keep the newest N of them, deleting the oldest\n"
		"      --pprof-dir DIR    with --switch-output: also a pprof profile of each file,\n"
		"                         DIR/FILE.pb.gz (kept and deleted along with the files)\n"
		"  -m, --mmap-pages N     ring size per CPU in pages, a power of two (default 256)\n"
		"      --max-threads N    size of the per-thread map (default 32768)\n"
		"  -N, --no-buildid-cache keep no copies of containers' files: spanperf-debuginfo(7)\n"
		"      --perf-cache       also enter those copies in perf's ~/.debug, so that perf\n"
		"                         report finds them (never under a host file's build id)\n"
		"  -q, --quiet            print errors only\n"
		"  -v, --verbose          more detail; -vv adds libbpf's debug output and each\n"
		"                         BPF program's verifier figures and load time\n"
		"  -h, --help             this text\n"
		"\n"
		"It stops after -d seconds, when CMD exits, or on SIGINT/SIGTERM; the file is\n"
		"complete either way.  CMD is held until the events are on: its first\n"
		"instruction is recorded.\n"
		"\n"
		"Examples:\n"
		"  spanperf record -g -d 10                  # whole host for 10 s, with stacks\n"
		"  spanperf record -F 4999 -p 1234 -d 5      # one process, 4999 Hz\n"
		"  spanperf record -g -- make -j8            # make and every process it starts\n"
		"  spanperf record -a -g -- make -j8         # the whole host while make runs\n"
		"  spanperf record -e page-faults -c 1 -d 2  # every page fault\n"
		"  spanperf record -g --span syscall:read -d 5   # read() calls as spans\n"
		"  spanperf record --span uprobe:libc.so.6:malloc -- ./app\n"
		"  spanperf record --span kprobe:vfs_read@auto -d 5\n"
		"\n"
		"Span sources: kprobe:FUNC[@kprobe|fentry|auto], uprobe:PATH:FUNC, syscall:NAME,\n"
		"tracepoint:CAT:BEGIN,CAT:END.  See them with: spanperf report --spans\n");
}

/*
 * perf's spelling: fp, or dwarf with an optional stack size in bytes, which
 * the kernel takes in u64 words below 64 KiB (perf rounds it up to 8); and
 * ehframe, which perf does not have.
 */
static int opt_call_graph(const char *arg, void *opts, char *err, size_t errlen)
{
	struct record_opts *o = opts;
	uint64_t size = 8192;

	o->ehframe = o->ehframe_auto = false;
	if (!arg) { /* -g: ehframe, or fp where the kernel lacks what it needs (record__run) */
		o->callgraph = o->ehframe = o->ehframe_auto = true;
		o->dwarf_stack = 0;
		return 0;
	}
	if (!strcmp(arg, "fp")) { /* perf's -g */
		o->callgraph = true;
		o->dwarf_stack = 0;
		return 0;
	}
	if (!strcmp(arg, "ehframe")) {
		o->callgraph = true;
		o->dwarf_stack = 0;
		o->ehframe = true;
		return 0;
	}
	if (strncmp(arg, "dwarf", 5) || (arg[5] && arg[5] != ','))
		return set_errorf(err, errlen, -EINVAL, "--call-graph '%s' is not fp, dwarf[,SIZE] or ehframe", arg);
	if (arg[5] == ',' && parse_u64(arg + 6, &size, 8, 65528))
		return set_errorf(err, errlen, -EINVAL, "--call-graph '%s': SIZE is not a byte count from 8 to 65528",
				  arg);
	o->callgraph = true;
	o->dwarf_stack = (size + 7) & ~7ULL;
	return 0;
}

static int opt_span(const char *arg, void *opts, char *err, size_t errlen)
{
	struct record_opts *o = opts;

	(void)err;
	(void)errlen;
	return cmd_push_arg(&o->spans, &o->nr_spans, arg);
}

static int opt_offcpu_thresh(const char *arg, void *opts, char *err, size_t errlen)
{
	struct record_opts *o = opts;
	uint64_t ms;

	if (parse_u64(arg, &ms, 0, 1ull << 40))
		return set_errorf(err, errlen, -EINVAL, "--off-cpu-thresh '%s' is not a number of milliseconds", arg);
	o->offcpu_thresh_ms = ms;
	return 0;
}

/*
 * perf's spellings: "signal", a size with its unit (B, K, M, G) or a time
 * with its unit (s, m, h, d).  A bare number is neither, as in perf.
 */
static int opt_switch_output(const char *arg, void *opts, char *err, size_t errlen)
{
	static const struct { char unit; uint64_t size, ns; } units[] = {
		{ 'B', 1, 0 }, { 'K', 1ull << 10, 0 }, { 'M', 1ull << 20, 0 }, { 'G', 1ull << 30, 0 },
		{ 's', 0, 1000000000ull }, { 'm', 0, 60000000000ull }, { 'h', 0, 3600000000000ull },
		{ 'd', 0, 86400000000000ull },
	};
	struct record_opts *o = opts;
	size_t len = arg ? strlen(arg) : 0;
	char num[32];
	uint64_t v;

	o->switch_output = true;
	o->switch_size = o->switch_ns = 0;
	if (!arg || !strcmp(arg, "signal"))
		return 0;
	if (len >= 2 && len < sizeof(num)) {
		memcpy(num, arg, len - 1);
		num[len - 1] = 0;
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			if (arg[len - 1] != units[i].unit) /* case matters: m is minutes, M MiB */
				continue;
			if (parse_u64(num, &v, 1, UINT64_MAX / (units[i].size | units[i].ns)))
				break;
			o->switch_size = v * units[i].size;
			o->switch_ns = v * units[i].ns;
			return 0;
		}
	}
	return set_errorf(err, errlen, -EINVAL,
			  "--switch-output '%s' is not signal, a size like 100M (B/K/M/G) or a time like 30s (s/m/h/d)",
			  arg);
}

#define R(f) offsetof(struct record_opts, f)
static const struct opt_def record_defs[] = {
	OPT_DEFS_RUN(struct record_opts),
	{ .name = "cpu", .letter = 'C', .type = OPT_T_CPUS, .off = R(cpus), .bad = "is not a CPU list like 0-3,8" },
	{ .name = "freq", .letter = 'F', .type = OPT_T_U64, .off = R(freq), .lo = 1, .hi = MAX_FREQ,
	  .bad = "is not a frequency in Hz from 1 to 1000000" },
	{ .name = "count", .letter = 'c', .type = OPT_T_U64, .off = R(period), .lo = 1, .hi = UINT64_MAX >> 1,
	  .bad = "is not a positive event count" },
	{ .name = "event", .letter = 'e', .type = OPT_T_STR, .off = R(events),
	  .bad = "needs an event name; see 'spanperf list'" },
	{ .name = "call-graph", .type = OPT_T_FN, .fn = opt_call_graph },
	{ .letter = 'g', .type = OPT_T_FN_FLAG, .fn = opt_call_graph },
	{ .name = "span", .type = OPT_T_FN, .fn = opt_span },
	{ .name = "span-min-us", .type = OPT_T_U64, .off = R(span_min_us), .hi = UINT64_MAX / 1000,
	  .bad = "is not a number of microseconds" },
	{ .name = "span-counters", .type = OPT_T_STR, .off = R(span_counters), .bad = "needs event names" },
	{ .name = "span-buffer", .type = OPT_T_POW2, .off = R(span_buffer_kb), .lo = 4, .hi = 1 << 20,
	  .bad = "is not a power of two from 4 to 1048576 KiB" },
	{ .name = "otel", .type = OPT_T_FLAG, .off = R(otel) },
	{ .name = "off-cpu", .type = OPT_T_FLAG, .off = R(offcpu) },
	{ .name = "no-wakers", .type = OPT_T_FLAG, .off = R(no_wakers) },
	{ .name = "sched", .type = OPT_T_FLAG, .off = R(sched) },
	{ .name = "no-sched-split", .type = OPT_T_FLAG, .off = R(no_sched_split) },
	{ .name = "off-cpu-thresh", .type = OPT_T_FN, .fn = opt_offcpu_thresh },
	{ .name = "off-cpu-entries", .type = OPT_T_U64, .off = R(offcpu_entries), .lo = 16, .hi = 1 << 24,
	  .bad = "is not a number from 16 to 16777216" },
	OPT_DEFS_OUTPUT(struct record_opts),
	{ .name = "switch-output", .type = OPT_T_FN_OPTARG, .fn = opt_switch_output },
	{ .name = "switch-max-files", .type = OPT_T_U64, .off = R(switch_max_files), .lo = 1, .hi = 1 << 20,
	  .bad = "is not a number of files from 1 to 1048576" },
	{ .name = "pprof-dir", .type = OPT_T_STR, .off = R(pprof_dir), .bad = "needs a directory" },
	{ .name = "mmap-pages", .letter = 'm', .type = OPT_T_POW2, .off = R(mmap_pages), .lo = 1, .hi = 1 << 20,
	  .bad = "is not a power of two from 1 to 1048576 pages" },
	{ .name = "no-buildid-cache", .letter = 'N', .type = OPT_T_FLAG, .off = R(no_buildid_cache) },
	{ .name = "perf-cache", .type = OPT_T_FLAG, .off = R(perf_cache) },
	OPT_DEFS_VERBOSITY(struct record_opts),
	{}
};
#undef R

/* What no single flag can check: the pairs, and the defaults that follow from others. */
static int record_check(struct record_opts *o, uint64_t seen, int argc, char **argv, char *err, size_t errlen)
{
	bool freq_set = seen & (1ull << opts_index(record_defs, "freq"));
	bool period_set = seen & (1ull << opts_index(record_defs, "count"));

	if (freq_set && period_set)
		return set_errorf(err, errlen, -EINVAL, "-F and -c both set the sampling rate; give one of them");
	if (period_set)
		o->freq = 0;
	if (!o->offcpu && (o->offcpu_thresh_ms >= 0 || o->no_wakers))
		return set_errorf(err, errlen, -EINVAL, "--off-cpu-thresh and --no-wakers need --off-cpu");
	if (!o->offcpu && !o->sched && o->offcpu_entries != RECORD_OFFCPU_ENTRIES)
		return set_errorf(err, errlen, -EINVAL, "--off-cpu-entries needs --off-cpu or --sched");
	if (o->no_sched_split && !o->nr_spans)
		return set_errorf(err, errlen, -EINVAL, "--no-sched-split needs --span");
	if (o->switch_max_files && !o->switch_output)
		return set_errorf(err, errlen, -EINVAL, "--switch-max-files needs --switch-output");
	if (o->pprof_dir && !o->switch_output)
		return set_errorf(err, errlen, -EINVAL, "--pprof-dir needs --switch-output");
	/*
	 * A DWARF sample carries its stack copy: 999 Hz of 8 KiB is 8 MB/s a
	 * CPU, which a 1 MiB ring cannot hold through one slow write.
	 */
	if (o->dwarf_stack && !(seen & (1ull << opts_index(record_defs, "mmap-pages"))))
		o->mmap_pages = 1024;
	o->all_cpus = seen & (1ull << opts_index(record_defs, "all-cpus"));
	return opts_target(&o->pids, &o->tids, argc, argv, &o->cmd, err, errlen);
}

int record_parse_args(int argc, char **argv, struct record_opts *o, char *err, size_t errlen)
{
	uint64_t seen;
	int e;

	record_opts_defaults(o);
	e = opts_parse(record_defs, OPTS_STOP_AT_ARG, argc, argv, o, &seen, record_usage, err, errlen);
	return e ?: record_check(o, seen, argc, argv, err, errlen);
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o;
	char err[512];
	int e, ret = 1;

	sp_prog = "spanperf record";
	/* A wrong --span text is a usage error too, said before anything runs. */
	e = record_parse_args(argc, argv, &o, err, sizeof(err)) ?: record_opts_parse_specs(&o, err, sizeof(err));
	if (e) {
		ret = cmd_parse_failed(e, err);
		goto cleanup;
	}
	sp_verbose = o.verbose;
	/* --pprof-dir: each file's profile from the recording as it is made (live/). */
	e = o.pprof_dir ? pprof_dir_record(&o, sp_argc, sp_argv, &ret) : record__run(&o, sp_argc, sp_argv, &ret);
	if (e)
		ret = 1;
cleanup:
	record_opts_free(&o);
	return ret;
}
