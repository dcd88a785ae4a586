// SPDX-License-Identifier: GPL-2.0
/*
 * spanperf top: perf top's refreshing table, from the recorder's own BPF
 * sampling.  The recorder runs with --switch-output every -d seconds into
 * a private folder; each finished window goes through report's pipeline
 * (the symbolizer, the sort keys, the table) and is deleted.  So the table
 * is the last window's, symbols are those report finds, and memory is one
 * window's worth, whatever runs on the host.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <curses.h>

#include "cmd_opts.h"
#include "commands.h"
#include "log.h"
#include "options.h"
#include "parse.h"
#include "profile.h"
#include "record.h"
#include "report_out.h"
#include "report_spans.h"
#include "span_sources.h"
#include "symbols.h"
#include "util.h"

/*
 * Files whose symbols stay loaded between windows: a host's busy set, in
 * bounded memory (a symbol is about 40 bytes and its name).
 */
#define TOP_KEPT_TABLES 256
#define TOP_KEPT_SYMS (512u << 10)

struct top_opts {
	struct int_list pids, tids, cpus;
	uint64_t freq;
	const char *events;
	bool callgraph;
	const char *sort;
	double delay;		/* -d: seconds between refreshes */
	uint64_t entries;	/* -E */
	uint64_t iterations;	/* -n: refreshes, then exit (0: until q or a signal) */
	bool stdio, batch;
	bool spans, offcpu;	/* --spans: the span table; --off-cpu adds where spans blocked */
	const char **span_texts; /* --span, as record's */
	int nr_spans;
	int verbose;
};

static void top_usage(FILE *out)
{
	fprintf(out,
		"Usage: spanperf top [options]\n"
		"\n"
		"The hottest symbols, refreshed, sampled as spanperf record samples.\n"
		"\n"
		"  -a, --all-cpus         the whole host (the default)\n"
		"  -p, --pid PID,..       only these processes\n"
		"  -t, --tid TID,..       only these threads\n"
		"  -C, --cpu CPUS         only these CPUs, e.g. 0-3,8\n"
		"  -F, --freq HZ          samples per second per CPU (default 999)\n"
		"  -e, --event EVENT      sampling event (default cycles, else cpu-clock)\n"
		"  -g                     call chains: each row's callers under it (unwound as\n"
		"                         record -g does: ehframe, else frame pointers)\n"
		"  -s, --sort KEYS        as report: comm,pid,tid,dso,sym,... (default comm,dso,sym)\n"
		"  -d, --delay SECS       seconds between refreshes; each table is that window (default 2)\n"
		"  -E, --entries N        rows shown (default 20)\n"
		"  -n, --iterations N     N refreshes, then exit\n"
		"      --stdio            print each table, clearing the terminal in between\n"
		"      --batch            print each table after the last, for scripts (with -n)\n"
		"                         (without either: a full screen on a terminal, keys:\n"
		"                         q quits, s sorts, / filters rows, p pauses)\n"
		"      --spans --span SPEC  the span table instead: per span name its rate,\n"
		"                         p50/p99, time on CPU and top functions (SPEC as record's)\n"
		"      --off-cpu          with --spans: also time off CPU and where spans blocked\n"
		"  -q, --quiet / -v, --verbose\n"
		"  -h, --help\n"
		"\n"
		"It stops on SIGINT/SIGTERM or after -n refreshes.\n"
		"\n"
		"Examples:\n"
		"  spanperf top --stdio\n"
		"  spanperf top --batch -n 2 -d 1 -E 5\n"
		"  spanperf top -p 1234 -g --sort sym\n");
}

static int opt_span(const char *arg, void *opts, char *err, size_t errlen)
{
	struct top_opts *o = opts;

	(void)err;
	(void)errlen;
	return cmd_push_arg(&o->span_texts, &o->nr_spans, arg);
}

#define T(f) offsetof(struct top_opts, f)
static const struct opt_def top_defs[] = {
	{ .name = "all-cpus", .letter = 'a', .type = OPT_T_NONE },
	{ .name = "pid", .letter = 'p', .type = OPT_T_IDS, .off = T(pids),
	  .bad = "is not a comma-separated list of process ids" },
	{ .name = "tid", .letter = 't', .type = OPT_T_IDS, .off = T(tids),
	  .bad = "is not a comma-separated list of thread ids" },
	{ .name = "cpu", .letter = 'C', .type = OPT_T_CPUS, .off = T(cpus), .bad = "is not a CPU list like 0-3,8" },
	{ .name = "freq", .letter = 'F', .type = OPT_T_U64, .off = T(freq), .lo = 1, .hi = 1000000,
	  .bad = "is not a frequency in Hz from 1 to 1000000" },
	{ .name = "event", .letter = 'e', .type = OPT_T_STR, .off = T(events),
	  .bad = "needs an event name; see 'spanperf list'" },
	{ .letter = 'g', .type = OPT_T_FLAG, .off = T(callgraph) },
	{ .name = "sort", .letter = 's', .type = OPT_T_STR, .off = T(sort), .bad = "needs sort keys" },
	{ .name = "delay", .letter = 'd', .type = OPT_T_SECONDS, .off = T(delay),
	  .bad = "is not a positive number of seconds" },
	{ .name = "entries", .letter = 'E', .type = OPT_T_U64, .off = T(entries), .lo = 1, .hi = 100000,
	  .bad = "is not a number of rows from 1 to 100000" },
	{ .name = "iterations", .letter = 'n', .type = OPT_T_U64, .off = T(iterations), .lo = 1, .hi = 1u << 30,
	  .bad = "is not a positive number of refreshes" },
	{ .name = "stdio", .type = OPT_T_FLAG, .off = T(stdio) },
	{ .name = "spans", .type = OPT_T_FLAG, .off = T(spans) },
	{ .name = "span", .type = OPT_T_FN, .fn = opt_span },
	{ .name = "off-cpu", .type = OPT_T_FLAG, .off = T(offcpu) },
	{ .name = "batch", .type = OPT_T_FLAG, .off = T(batch) },
	OPT_DEFS_VERBOSITY(struct top_opts),
	{}
};
#undef T

struct top {
	const struct top_opts *o;
	struct table_opts to;
	char sort[128];
	uint64_t refreshes;
	bool clear;
	/* The full-screen view: the last window's profile (re-sorted on 's'), its filter, pause. */
	bool curses, paused;
	struct profile *last;
	char *text; /* --spans: the last window's table */
	char filter[64];
	char note[128];
};

/* The table's header and its first E rows (with their chains under -g). */
static void print_rows(const char *text, uint64_t entries, FILE *out)
{
	uint64_t rows = 0;

	for (const char *l = text, *nl; *l; l = nl) {
		const char *p = l;

		nl = strchr(l, '\n');
		nl = nl ? nl + 1 : l + strlen(l);
		while (*p == ' ')
			p++;
		if (*p >= '0' && *p <= '9' && ++rows > entries)
			break;
		fwrite(l, 1, nl - l, out);
	}
}

/* The last window's table as text; NULL on failure (said). */
static char *table_text(struct top *t)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	int e = mem ? report_table(t->last, &t->to, mem) : -errno;

	if (mem)
		fclose(mem);
	if (e) {
		free(text);
		snprintf(t->note, sizeof(t->note), "cannot draw the table: %s", strerror(-e));
		return NULL;
	}
	return text;
}

static bool is_row(const char *l)
{
	while (*l == ' ')
		l++;
	return *l >= '0' && *l <= '9';
}

/* The screen: title, the table's column line and rows (filtered, cut to -E and the height), the keys. */
static void draw(struct top *t)
{
	char *text = t->o->spans ? (t->text ? strdup(t->text) : NULL) : t->last ? table_text(t) : NULL;
	uint64_t rows = 0;
	bool hide = false;
	int y = 2;

	erase();
	mvprintw(0, 0, "   spanperf top: %llu samples in %.1f s [%llu Hz], refresh %llu%s",
		 (unsigned long long)(t->last ? t->last->samples : 0), t->o->delay, (unsigned long long)t->o->freq,
		 (unsigned long long)t->refreshes, t->paused ? "  [paused]" : "");
	mvhline(1, 0, '-', COLS);
	if (!t->refreshes)
		mvprintw(y, 0, "waiting %.1f s for the first window...", t->o->delay);
	for (const char *l = text ? text : "", *nl; *l && y < LINES - 1; l = nl) {
		int n;

		nl = strchr(l, '\n');
		nl = nl ? nl + 1 : l + strlen(l);
		n = nl - l - (nl[-1] == '\n');
		if (*l == '#' && strncmp(l, "# Overhead", 10) && strncmp(l, "# name", 6))
			continue;
		if (is_row(l) || (t->o->spans && *l != '#')) {
			char line[1024];

			snprintf(line, sizeof(line), "%.*s", n, l);
			hide = t->filter[0] && !strstr(line, t->filter);
			if (!hide && ++rows > t->o->entries)
				break;
		}
		if (!hide)
			mvaddnstr(y++, 0, l, SP_MIN(n, COLS));
	}
	attron(A_REVERSE);
	mvprintw(LINES - 1, 0, " q quit  s sort [%s]  / filter [%s]  p %s  %s", t->sort, t->filter,
		 t->paused ? "resume" : "pause", t->note);
	attroff(A_REVERSE);
	refresh();
	free(text);
}

/* A line typed on the bottom row, with echo; the loop waits meanwhile (the rings hold seconds). */
static void prompt(const char *what, char *buf, int len)
{
	move(LINES - 1, 0);
	clrtoeol();
	printw("%s", what);
	echo();
	curs_set(1);
	nodelay(stdscr, FALSE);
	getnstr(buf, len - 1);
	nodelay(stdscr, TRUE);
	curs_set(0);
	noecho();
}

/* Keys, after each pass of the recorder's loop: nonzero quits. */
static int on_keys(void *arg)
{
	struct top *t = arg;
	int c;

	while ((c = getch()) != ERR) {
		char buf[128] = "";

		t->note[0] = 0;
		switch (c) {
		case 'q':
		case 'Q':
			return 1;
		case 'p':
			t->paused = !t->paused;
			break;
		case 's':
			prompt("sort keys (comm,pid,tid,dso,sym): ", buf, sizeof(buf));
			if (buf[0]) {
				struct table_opts to = t->to;

				if (parse_sort_keys(buf, &to)) {
					snprintf(t->note, sizeof(t->note), "unknown or repeated sort key in '%.60s'", buf);
				} else {
					t->to = to;
					snprintf(t->sort, sizeof(t->sort), "%s", buf);
				}
			}
			break;
		case '/':
			prompt("filter rows by: ", buf, sizeof(buf));
			snprintf(t->filter, sizeof(t->filter), "%s", buf);
			break;
		default:
			continue;
		}
		draw(t);
	}
	return 0;
}

/* top --spans: the window's spans as report --spans tables them, with their rate. */
static char *spans_text(struct top *t, const char *path, char *err, size_t errlen)
{
	struct spans_report_opts so = { .input = path, .window_s = t->o->delay };
	char *text = NULL;
	size_t len = 0;
	int e;

	so.out = open_memstream(&text, &len);
	if (!so.out) {
		snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	e = spans_report(&so, err, errlen);
	fclose(so.out);
	if (e) {
		free(text);
		return NULL;
	}
	return text;
}

static int on_window(const char *path, void *arg)
{
	struct top *t = arg;
	const struct top_opts *o = t->o;
	struct profile *p = NULL;
	char err[512] = "", *text = NULL;
	__u64 samples = 0;
	int e = 0;

	if (o->iterations && t->refreshes >= o->iterations)
		return 1;
	if (t->paused) {
		unlink(path);
		return 0;
	}
	if (o->spans) {
		text = spans_text(t, path, err, sizeof(err));
		e = text ? 0 : -EINVAL;
	} else {
		/* The last window's symbolizer first: its tables go back to be found by this one. */
		profile__free(t->last);
		t->last = NULL;
		e = profile__load(&p, path, NULL, err, sizeof(err));
	}
	unlink(path); /* read: nothing of it is kept */
	if (e) {
		if (t->curses)
			snprintf(t->note, sizeof(t->note), "a refresh was lost");
		else
			pr_warn("a refresh was lost: %s", err);
		return 0;
	}
	t->refreshes++;
	if (t->curses) {
		profile__free(t->last);
		t->last = p;
		free(t->text);
		t->text = text;
		draw(t);
		return o->iterations && t->refreshes >= o->iterations;
	}
	if (p) {
		t->last = p;
		text = table_text(t);
		t->last = NULL;
		samples = p->samples;
		profile__free(p);
	}
	if (text) {
		if (t->clear)
			fputs("\033[H\033[2J", stdout);
		else if (t->refreshes > 1)
			fputc('\n', stdout);
		if (o->spans)
			printf("   spanperf top: spans of the last %.1f s, refresh %llu\n", o->delay,
			       (unsigned long long)t->refreshes);
		else
			printf("   spanperf top: %llu samples in %.1f s [%llu Hz], refresh %llu\n", (unsigned long long)samples,
			       o->delay, (unsigned long long)o->freq, (unsigned long long)t->refreshes);
		fputs("-------------------------------------------------------------------------------\n", stdout);
		print_rows(text, o->spans ? UINT64_MAX : o->entries, stdout);
		fflush(stdout);
	} else {
		pr_warn("a refresh was lost: %s", t->note);
	}
	free(text);
	return o->iterations && t->refreshes >= o->iterations;
}

/* The folder and what is left in it: the last window, a temporary the run was cut in. */
static void remove_windows(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	rmdir(dir);
}

int top_parse_args(int argc, char **argv, struct top_opts *o, char *err, size_t errlen)
{
	uint64_t seen;
	int e;

	memset(o, 0, sizeof(*o));
	o->freq = 999;
	o->delay = 2;
	o->entries = 20;
	e = opts_parse(top_defs, 0, argc, argv, o, &seen, top_usage, err, errlen);
	if (e)
		return e;
	if (optind < argc)
		return set_errorf(err, errlen, -EINVAL, "top runs no command ('%s'); see --help", argv[optind]);
	if (o->pids.n && o->tids.n)
		return set_errorf(err, errlen, -EINVAL, "-p and -t both filter; give one of them");
	if (o->spans != (o->nr_spans > 0))
		return set_errorf(err, errlen, -EINVAL, "--spans and --span SPEC go together: the table is of those spans");
	if (o->offcpu && !o->spans)
		return set_errorf(err, errlen, -EINVAL, "--off-cpu needs --spans: it shows where spans blocked");
	if (o->stdio && o->batch)
		return set_errorf(err, errlen, -EINVAL, "--stdio and --batch are two ways to print; give one of them");
	return 0;
}

int cmd_top(int argc, char **argv)
{
	char dir[] = "/tmp/spanperf-top-XXXXXX", out[sizeof(dir) + 16], err[512];
	struct top_opts o;
	struct record_opts ro = {};
	struct top t = { .o = &o };
	int e, ret = 1;
	char *rargv[] = { "record", NULL };

	sp_prog = "spanperf top";
	e = top_parse_args(argc, argv, &o, err, sizeof(err));
	if (e) {
		ret = cmd_parse_failed(e, err);
		goto cleanup_opts;
	}
	parse_sort_keys("comm,dso,sym", &t.to);
	if (o.sort && parse_sort_keys(o.sort, &t.to)) {
		pr_err("--sort '%s' has an unknown or repeated key", o.sort);
		goto cleanup_opts;
	}
	snprintf(t.sort, sizeof(t.sort), "%s", o.sort ? o.sort : "comm,dso,sym");
	t.to.callgraph = o.callgraph;
	t.clear = o.stdio && isatty(STDOUT_FILENO);
	/* Without --stdio or --batch: the curses screen, when there is a terminal to draw on. */
	if (!o.stdio && !o.batch && !(isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)))
		o.batch = true;
	t.curses = !o.stdio && !o.batch;
	/* record's defaults, then what top sets. */
	e = record_parse_args(1, rargv, &ro, err, sizeof(err));
	if (e) {
		pr_err("%s", err);
		goto cleanup_opts;
	}
	ro.pids = o.pids;
	ro.tids = o.tids;
	ro.cpus = o.cpus;
	memset(&o.pids, 0, sizeof(o.pids));
	memset(&o.tids, 0, sizeof(o.tids));
	memset(&o.cpus, 0, sizeof(o.cpus));
	ro.freq = o.freq;
	ro.events = o.events;
	ro.callgraph = o.callgraph;
	/* As record's -g: ehframe where the kernel has what it needs (record__run decides). */
	ro.ehframe = ro.ehframe_auto = o.callgraph;
	ro.no_buildid_cache = true; /* nothing is kept: nothing to look up later */
	if (o.spans) {
		ro.spans = o.span_texts;
		ro.nr_spans = o.nr_spans;
		o.span_texts = NULL;
		ro.offcpu = o.offcpu;
		if (ro.nr_spans > SP_MAX_SPANS) {
			pr_err("%d --span given; at most %d", ro.nr_spans, SP_MAX_SPANS);
			goto cleanup;
		}
		ro.specs = calloc(ro.nr_spans, sizeof(*ro.specs));
		if (!ro.specs)
			goto cleanup;
		for (int i = 0; i < ro.nr_spans; i++)
			if (span_spec_parse(ro.spans[i], &ro.specs[i], err, sizeof(err))) {
				pr_err("%s", err);
				goto cleanup;
			}
	}
	ro.switch_output = true;
	ro.switch_ns = o.delay * 1e9;
	ro.switch_max_files = 1;
	ro.on_switch = on_window;
	ro.on_switch_arg = &t;
	if (!mkdtemp(dir)) {
		pr_err("cannot make a folder for the windows in /tmp: %s", strerror(errno));
		goto cleanup;
	}
	snprintf(out, sizeof(out), "%s/top.data", dir);
	ro.output = out;
	/* Each window's symbolizer finds the files the last one read, unchanged, already loaded. */
	symbolizer_keep_tables(TOP_KEPT_TABLES, TOP_KEPT_SYMS);
	/* The recorder's lines (a file dumped, the summary) are not top's: its tables are. */
	sp_verbose = o.verbose > 0 ? o.verbose : -1;
	if (t.curses) {
		initscr();
		cbreak();
		noecho();
		nodelay(stdscr, TRUE);
		keypad(stdscr, TRUE);
		curs_set(0);
		ro.on_pass = on_keys;
		ro.wake_fd = STDIN_FILENO;
		draw(&t);
	}
	e = record__run(&ro, sp_argc, sp_argv, &ret);
	if (t.curses)
		endwin(); /* the terminal as it was, whatever ended the run */
	ret = e ? 1 : 0;
	profile__free(t.last);
	free(t.text);
	symbolizer_keep_tables(0, 0);
	remove_windows(dir);
cleanup:
	record_opts_free(&ro);
cleanup_opts:
	free(o.span_texts);
	int_list_free(&o.pids);
	int_list_free(&o.tids);
	int_list_free(&o.cpus);
	return ret;
}
