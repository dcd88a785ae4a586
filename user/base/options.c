// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "options.h"

#define MAX_FREQ 1000000   /* the kernel caps it lower (perf_event_max_sample_rate) */
#define MAX_CPUS 65536
#define MAX_ID 0x3fffffff  /* PID_MAX_LIMIT */

#define fail(err, len, ...) set_errorf(err, len, -EINVAL, __VA_ARGS__)

/* -p and -t, shared by record and stat. */
static int opt_ids(int c, const char *arg, struct int_list *pids, struct int_list *tids, char *err, size_t len)
{
	struct int_list *l = c == 'p' ? pids : tids;

	int_list_free(l);
	if (int_list_parse(l, arg, false, MAX_ID))
		return fail(err, len, "-%c '%s' is not a comma-separated list of %s", c, arg,
			    c == 'p' ? "process ids" : "thread ids");
	return 0;
}

static int opt_duration(const char *arg, double *out, char *err, size_t len)
{
	if (parse_seconds(arg, out))
		return fail(err, len, "-d '%s' is not a positive number of seconds", arg);
	return 0;
}

static int opt_max_threads(const char *arg, uint64_t *out, char *err, size_t len)
{
	if (parse_u64(arg, out, 1, 1 << 24))
		return fail(err, len, "--max-threads '%s' is not a number from 1 to %d", arg, 1 << 24);
	return 0;
}

static int opt_output(const char *arg, const char **out, char *err, size_t len)
{
	if (!*arg)
		return fail(err, len, "-o needs a file name");
	*out = arg;
	return 0;
}

static void opt_verbosity(int c, int *v)
{
	*v = c == 'q' ? -1 : *v < 0 ? 1 : *v + 1;
}

/* getopt's own messages are off; this names the option the way it was written. */
static int bad_option(char *err, size_t len, int argc, char **argv, int opt)
{
	const char *arg = optind - 1 < argc ? argv[optind - 1] : "?";

	if (opt == ':')
		return fail(err, len, "option '%s' needs a value", arg);
	if (optopt)
		return fail(err, len, "unknown option '-%c'; see --help", optopt);
	return fail(err, len, "unknown option '%s'; see --help", arg);
}

/* What record and stat share after the flags: one filter, then `-- CMD ARGS`. */
static int finish_target(const struct int_list *pids, const struct int_list *tids, int argc, char **argv,
			 char ***cmd, char *err, size_t len)
{
	if (pids->n && tids->n)
		return fail(err, len, "-p and -t both filter; give one of them");
	if (optind < argc) {
		*cmd = &argv[optind];
		if (!argv[optind][0])
			return fail(err, len, "the command to run is an empty string");
	}
	return 0;
}

void record_usage(FILE *out)
{
	fprintf(out,
		"Usage: spanperf record [options] [-- CMD [ARGS...]]\n"
		"\n"
		"Samples every CPU with a BPF program on each sampling event and writes a\n"
		"perf.data that perf report and perf script read.\n"
		"\n"
		"  -a, --all-cpus         sample the whole host (the default)\n"
		"  -p, --pid PID,..       keep only samples of these processes (BPF filter)\n"
		"  -t, --tid TID,..       keep only samples of these threads (BPF filter)\n"
		"  -C, --cpu CPUS         sample only these CPUs, e.g. 0-3,8\n"
		"  -F, --freq HZ          samples per second per CPU (default 999)\n"
		"  -c, --count PERIOD     sample every PERIOD events instead of -F\n"
		"  -e, --event EVENT,..   sampling event (default cycles, else cpu-clock)\n"
		"  -g                     record kernel and user call chains (frame pointers)\n"
		"  --call-graph fp|dwarf[,SIZE]\n"
		"                         fp: as -g; dwarf: copy SIZE bytes of user stack (default 8192)\n"
		"                         and the registers, unwound by report with the files' CFI\n"
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
		"                         samples of offcpu-time (period = ns off CPU), as perf does\n"
		"      --off-cpu-thresh MS  blocks this long or longer are written one by one,\n"
		"                         shorter ones summed per thread and stack (default 500,\n"
		"                         0 with --span or --otel: spans need each block's time)\n"
		"      --off-cpu-entries N  stacks and sums kept in BPF (default 16384)\n"
		"  -d, --duration SECS    stop after SECS seconds\n"
		"  -o, --output FILE      output file (default perf.data; the old one becomes FILE.old)\n"
		"  -m, --mmap-pages N     ring size per CPU in pages, a power of two (default 256)\n"
		"      --max-threads N    size of the per-thread map (default 32768)\n"
		"  -N, --no-buildid-cache keep no copies of containers' files (see README)\n"
		"  -q, --quiet            print errors only\n"
		"  -v, --verbose          more detail; -vv adds libbpf's debug output\n"
		"  -h, --help             this text\n"
		"\n"
		"It stops after -d seconds, when CMD exits, or on SIGINT/SIGTERM; the file is\n"
		"complete either way.\n"
		"\n"
		"Examples:\n"
		"  spanperf record -g -d 10                  # whole host for 10 s, with stacks\n"
		"  spanperf record -F 4999 -p 1234 -d 5      # one process, 4999 Hz\n"
		"  spanperf record -g -- make -j8            # whole host while make runs\n"
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
 * the kernel takes in u64 words below 64 KiB (perf rounds it up to 8).
 */
static int opt_call_graph(const char *arg, struct record_opts *o, char *err, size_t errlen)
{
	uint64_t size = 8192;

	if (!strcmp(arg, "fp")) {
		o->callgraph = true;
		o->dwarf_stack = 0;
		return 0;
	}
	if (strncmp(arg, "dwarf", 5) || (arg[5] && arg[5] != ','))
		return fail(err, errlen, "--call-graph '%s' is not fp or dwarf[,SIZE]", arg);
	if (arg[5] == ',' && parse_u64(arg + 6, &size, 8, 65528))
		return fail(err, errlen, "--call-graph '%s': SIZE is not a byte count from 8 to 65528", arg);
	o->callgraph = true;
	o->dwarf_stack = (size + 7) & ~7ULL;
	return 0;
}

int record_parse_args(int argc, char **argv, struct record_opts *o, char *err, size_t errlen)
{
	enum { OPT_SPAN = 256, OPT_CALL_GRAPH, OPT_SPAN_MIN, OPT_MAX_THREADS, OPT_SPAN_COUNTERS, OPT_SPAN_BUFFER, OPT_RAW_TP,
	       OPT_OFFCPU, OPT_OFFCPU_THRESH, OPT_OFFCPU_ENTRIES, OPT_OTEL };
	static const struct option longopts[] = {
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "freq", required_argument, NULL, 'F' },
		{ "count", required_argument, NULL, 'c' },
		{ "event", required_argument, NULL, 'e' },
		{ "call-graph", required_argument, NULL, OPT_CALL_GRAPH },
		{ "span", required_argument, NULL, OPT_SPAN },
		{ "span-min-us", required_argument, NULL, OPT_SPAN_MIN },
		{ "span-counters", required_argument, NULL, OPT_SPAN_COUNTERS },
		{ "span-buffer", required_argument, NULL, OPT_SPAN_BUFFER },
		{ "raw-tp", no_argument, NULL, OPT_RAW_TP },
		{ "otel", no_argument, NULL, OPT_OTEL },
		{ "off-cpu", no_argument, NULL, OPT_OFFCPU },
		{ "off-cpu-thresh", required_argument, NULL, OPT_OFFCPU_THRESH },
		{ "off-cpu-entries", required_argument, NULL, OPT_OFFCPU_ENTRIES },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "mmap-pages", required_argument, NULL, 'm' },
		{ "max-threads", required_argument, NULL, OPT_MAX_THREADS },
		{ "no-buildid-cache", no_argument, NULL, 'N' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	bool freq_set = false, period_set = false, pages_set = false;
	int c, r;

	memset(o, 0, sizeof(*o));
	o->freq = 999;
	o->output = "perf.data";
	o->mmap_pages = 256;
	o->max_threads = 32768;
	o->span_buffer_kb = 8192;
	o->offcpu_thresh_ms = -1;
	o->offcpu_entries = 16384;
	optind = 0; /* glibc: re-initialise, so the parser can run more than once */
	opterr = 0;
	/* '+': stop at the first non-option, which starts CMD (as perf does). */
	while ((c = getopt_long(argc, argv, "+:ap:t:C:F:c:e:gd:o:m:Nqvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			break;
		case 'p':
		case 't':
			r = opt_ids(c, optarg, &o->pids, &o->tids, err, errlen);
			if (r)
				return r;
			break;
		case 'C':
			int_list_free(&o->cpus);
			if (int_list_parse(&o->cpus, optarg, true, MAX_CPUS - 1))
				return fail(err, errlen, "-C '%s' is not a CPU list like 0-3,8", optarg);
			break;
		case 'F':
			if (parse_u64(optarg, &o->freq, 1, MAX_FREQ))
				return fail(err, errlen, "-F '%s' is not a frequency in Hz from 1 to %d",
					    optarg, MAX_FREQ);
			freq_set = true;
			break;
		case 'c':
			if (parse_u64(optarg, &o->period, 1, UINT64_MAX >> 1))
				return fail(err, errlen, "-c '%s' is not a positive event count", optarg);
			period_set = true;
			break;
		case 'e':
			if (!*optarg)
				return fail(err, errlen, "-e needs an event name; see 'spanperf list'");
			o->events = optarg;
			break;
		case 'g':
			o->callgraph = true;
			o->dwarf_stack = 0;
			break;
		case OPT_CALL_GRAPH:
			r = opt_call_graph(optarg, o, err, errlen);
			if (r)
				return r;
			break;
		case OPT_OTEL:
			o->otel = true;
			break;
		case OPT_SPAN: {
			const char **ns = realloc(o->spans, (o->nr_spans + 1) * sizeof(*ns));

			if (!ns)
				return -ENOMEM;
			o->spans = ns;
			o->spans[o->nr_spans++] = optarg;
			break;
		}
		case OPT_RAW_TP:
			o->raw_tp = true;
			break;
		case OPT_OFFCPU:
			o->offcpu = true;
			break;
		case OPT_OFFCPU_THRESH: {
			uint64_t ms;

			if (parse_u64(optarg, &ms, 0, 1ull << 40))
				return fail(err, errlen, "--off-cpu-thresh '%s' is not a number of milliseconds", optarg);
			o->offcpu_thresh_ms = ms;
			break;
		}
		case OPT_OFFCPU_ENTRIES:
			if (parse_u64(optarg, &o->offcpu_entries, 16, 1 << 24))
				return fail(err, errlen, "--off-cpu-entries '%s' is not a number from 16 to %d", optarg,
					    1 << 24);
			break;
		case 'N':
			o->no_buildid_cache = true;
			break;
		case OPT_SPAN_MIN:
			if (parse_u64(optarg, &o->span_min_us, 0, UINT64_MAX / 1000))
				return fail(err, errlen, "--span-min-us '%s' is not a number of microseconds",
					    optarg);
			break;
		case OPT_MAX_THREADS:
			r = opt_max_threads(optarg, &o->max_threads, err, errlen);
			if (r)
				return r;
			break;
		case OPT_SPAN_BUFFER:
			if (parse_u64(optarg, &o->span_buffer_kb, 4, 1 << 20) ||
			    (o->span_buffer_kb & (o->span_buffer_kb - 1)))
				return fail(err, errlen, "--span-buffer '%s' is not a power of two from 4 to %d KiB",
					    optarg, 1 << 20);
			break;
		case OPT_SPAN_COUNTERS:
			if (!*optarg)
				return fail(err, errlen, "--span-counters needs event names");
			o->span_counters = optarg;
			break;
		case 'd':
			r = opt_duration(optarg, &o->duration, err, errlen);
			if (r)
				return r;
			break;
		case 'o':
			r = opt_output(optarg, &o->output, err, errlen);
			if (r)
				return r;
			break;
		case 'm':
			if (parse_u64(optarg, &o->mmap_pages, 1, 1 << 20) ||
			    (o->mmap_pages & (o->mmap_pages - 1)))
				return fail(err, errlen, "-m '%s' is not a power of two from 1 to %d pages",
					    optarg, 1 << 20);
			pages_set = true;
			break;
		case 'q':
		case 'v':
			opt_verbosity(c, &o->verbose);
			break;
		case 'h':
			record_usage(stdout);
			return OPT_HELP;
		default:
			return bad_option(err, errlen, argc, argv, c);
		}
	}
	if (freq_set && period_set)
		return fail(err, errlen, "-F and -c both set the sampling rate; give one of them");
	if (period_set)
		o->freq = 0;
	if (!o->offcpu && (o->offcpu_thresh_ms >= 0 || o->offcpu_entries != 16384))
		return fail(err, errlen, "--off-cpu-thresh and --off-cpu-entries need --off-cpu");
	/*
	 * A DWARF sample carries its stack copy: 999 Hz of 8 KiB is 8 MB/s a
	 * CPU, which a 1 MiB ring cannot hold through one slow write.
	 */
	if (o->dwarf_stack && !pages_set)
		o->mmap_pages = 1024;
	return finish_target(&o->pids, &o->tids, argc, argv, &o->cmd, err, errlen);
}

void record_opts_free(struct record_opts *o)
{
	if (!o)
		return;
	int_list_free(&o->pids);
	int_list_free(&o->tids);
	int_list_free(&o->cpus);
	free(o->spans);
	o->spans = NULL;
}

void stat_usage(FILE *out)
{
	fprintf(out,
		"Usage: spanperf stat [options] [-- CMD [ARGS...]]\n"
		"\n"
		"Counts events per thread: each counter is read by a BPF program at every\n"
		"context switch and added to the outgoing thread's entry in a BPF map.\n"
		"\n"
		"  -a, --all-cpus         count the whole host (the default)\n"
		"  -p, --pid PID,..       only these processes\n"
		"  -t, --tid TID,..       only these threads\n"
		"  -e, --event EVENT,..   events (default: task-clock, context-switches,\n"
		"                         cpu-migrations, page-faults, cycles, instructions,\n"
		"                         branches, branch-misses); at most 8\n"
		"      --per-thread       one row per thread instead of totals\n"
		"  -I, --interval-print MS  print every MS milliseconds\n"
		"  -j, --json             JSON lines, one per thread and event\n"
		"  -o, --output FILE      write the results to FILE (default: stderr, as perf)\n"
		"  -d, --duration SECS    stop after SECS seconds\n"
		"      --max-threads N    size of the per-thread map (default 32768)\n"
		"      --raw-tp           use the raw_tp switch hook even where tp_btf works\n"
		"  -q, --quiet / -v, --verbose\n"
		"  -h, --help\n"
		"\n"
		"It stops after -d seconds, when CMD exits, or on SIGINT/SIGTERM.\n"
		"\n"
		"Examples:\n"
		"  spanperf stat -d 5                              # whole host, 5 s\n"
		"  spanperf stat --per-thread -e task-clock,cs -- make -j8\n"
		"  spanperf stat -p 1234 -I 1000 --json -o out.jsonl\n"
		"  spanperf stat -e page-faults,sched:sched_switch -d 2\n");
}

int stat_parse_args(int argc, char **argv, struct stat_opts *o, char *err, size_t errlen)
{
	enum { OPT_PER_THREAD = 256, OPT_MAX_THREADS, OPT_RAW_TP };
	int r;
	static const struct option longopts[] = {
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "event", required_argument, NULL, 'e' },
		{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
		{ "interval-print", required_argument, NULL, 'I' },
		{ "json", no_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "max-threads", required_argument, NULL, OPT_MAX_THREADS },
		{ "raw-tp", no_argument, NULL, OPT_RAW_TP },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->max_threads = 32768;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:ap:t:e:I:jo:d:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			break;
		case 'p':
		case 't':
			r = opt_ids(c, optarg, &o->pids, &o->tids, err, errlen);
			if (r)
				return r;
			break;
		case 'e':
			if (!*optarg)
				return fail(err, errlen, "-e needs an event name; see 'spanperf list'");
			o->events = optarg;
			break;
		case OPT_PER_THREAD:
			o->per_thread = true;
			break;
		case 'I':
			if (parse_u64(optarg, &o->interval_ms, 10, 3600 * 1000))
				return fail(err, errlen, "-I '%s' is not an interval in milliseconds from 10 to 3600000",
					    optarg);
			break;
		case 'j':
			o->json = true;
			break;
		case 'o':
			r = opt_output(optarg, &o->output, err, errlen);
			if (r)
				return r;
			break;
		case 'd':
			r = opt_duration(optarg, &o->duration, err, errlen);
			if (r)
				return r;
			break;
		case OPT_MAX_THREADS:
			r = opt_max_threads(optarg, &o->max_threads, err, errlen);
			if (r)
				return r;
			break;
		case OPT_RAW_TP:
			o->raw_tp = true;
			break;
		case 'q':
		case 'v':
			opt_verbosity(c, &o->verbose);
			break;
		case 'h':
			stat_usage(stdout);
			return OPT_HELP;
		default:
			return bad_option(err, errlen, argc, argv, c);
		}
	}
	return finish_target(&o->pids, &o->tids, argc, argv, &o->cmd, err, errlen);
}

void stat_opts_free(struct stat_opts *o)
{
	if (!o)
		return;
	int_list_free(&o->pids);
	int_list_free(&o->tids);
}
