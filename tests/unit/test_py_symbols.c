// SPDX-License-Identifier: GPL-2.0
/*
 * Python frames named from the file alone: a perf.data made here by hand
 * holds spanperf-python records and samples at slot addresses, and report
 * must name each frame by its process, region and time.  A forked child
 * sees the names its parent had, an exec or a reused pid sees none of the
 * old ones, a record written after the samples that use it still names
 * them.  Then every output of spanperf report, on the same file, and perf
 * 6.1 on it with the ELF beside it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "perf_data.h"
#include "perf_sample.h"
#include "profile.h"
#include "py_elf.h"
#include "py_names.h"
#include "sbuf.h"
#include "session.h"
#include "span_codec.h"
#include "unit.h"

static char dir[64], path[128];

UNIT_SCRATCH_EACH(dir, path, "/tmp/sp-pysym-XXXXXX", "PY_SYM_KEEP") /* a folder per test; PY_SYM_KEEP=1 keeps it */

#define REGION 0x600000000000ull
#define REGION_LEN (1ull << 20)
#define UNITS 10
#define S1 REGION
#define S2 (REGION + 0x100)

static struct perf_event_attr cpu = { .size = sizeof(cpu), .type = PERF_TYPE_SOFTWARE,
				      .config = PERF_COUNT_SW_CPU_CLOCK,
				      .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
						     PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN,
				      .sample_period = 1000000, .sample_id_all = 1, .exclude_kernel = 1 };
static struct perf_event_attr pyattr, offattr, spanattr;

struct file {
	struct pd_writer *w;
	unsigned char buf[4096];
};

static void put(struct file *f, long n)
{
	assert_true(n > 0);
	assert_int_equal(pd_writer__write(f->w, f->buf, n), 0);
}

static void comm(struct file *f, __u32 pid, __u32 tid, __u64 t, const char *name, bool exec)
{
	struct pd_sideband r = { .type = PERF_RECORD_COMM, .misc = exec ? PERF_RECORD_MISC_COMM_EXEC : 0,
				 .comm = { pid, tid, name }, .sample_id = { .pid = pid, .tid = tid, .time = t, .id = 10 } };

	put(f, pd_sideband_write(f->buf, sizeof(f->buf), &cpu, &r));
}

static void task(struct file *f, __u32 type, __u32 pid, __u32 ppid, __u64 t)
{
	struct pd_sideband r = { .type = type, .task = { pid, ppid, pid, ppid, t },
				 .sample_id = { .pid = pid, .tid = pid, .time = t, .id = 10 } };

	put(f, pd_sideband_write(f->buf, sizeof(f->buf), &cpu, &r));
}

static void region(struct file *f, __u32 pid, __u64 t, const char *elf, __u64 pgoff)
{
	struct pd_sideband r = { .type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER,
				 .sample_id = { .pid = pid, .tid = pid, .time = t, .id = 10 },
				 .mmap = { .pid = pid, .tid = pid, .start = REGION, .len = REGION_LEN, .pgoff = pgoff,
					   .prot = PROT_READ | PROT_EXEC, .flags = MAP_PRIVATE, .filename = elf } };

	put(f, pd_sideband_write(f->buf, sizeof(f->buf), &cpu, &r));
}

/* Lines: units 0-4 at first, 5-9 at first + 2. */
static void name(struct file *f, __u32 pid, __u64 slot, __u64 t, const char *qual, const char *file, int first)
{
	struct sbuf b = {}, runs = {};
	struct py_runs pr;
	struct py_names_rec r = { .pid = pid, .slot = slot, .size = py_slot_size(UNITS), .ncodeunits = UNITS,
				  .firstlineno = first, .qualname = qual, .qualname_len = strlen(qual),
				  .filename = file, .filename_len = strlen(file) };

	py_runs_init(&pr, &runs, first, 100);
	py_runs_add(&pr, 5, first, false);
	py_runs_add(&pr, 5, first + 2, false);
	assert_int_equal(py_runs_end(&pr), 0);
	r.lines = (__u8 *)runs.p;
	r.lines_len = runs.len;
	assert_int_equal(py_names_rec_write(&b, &pyattr, PY_NAMES_ID, t, &r), 0);
	assert_int_equal(pd_writer__write(f->w, b.p, b.len), 0);
	sbuf_free(&b);
	sbuf_free(&runs);
}

/* A sample of tid whose chain is leaf, caller (0: none), at time t. */
static void sample(struct file *f, __u32 pid, __u32 tid, __u64 t, __u64 leaf, __u64 caller)
{
	__u64 chain[] = { PD_CONTEXT_USER, leaf, caller };
	struct pd_sample s = { .id = 10, .ip = leaf, .pid = pid, .tid = tid, .time = t, .period = 1000000,
			       .callchain_nr = caller ? 3 : 2, .callchain = chain };

	comm(f, pid, tid, t, "python3", false);
	put(f, pd_sample_write(f->buf, sizeof(f->buf), &cpu, PERF_RECORD_MISC_USER, &s));
}

static void round_end(struct file *f)
{
	struct perf_event_header h = { .type = PD_RECORD_FINISHED_ROUND, .size = sizeof(h) };

	assert_int_equal(pd_writer__write(f->w, &h, sizeof(h)), 0);
}

/* When set, what write_file's writer writes is also captured here (a live session's input). */
static struct unit_capture *capture_to;
/* write_file adds pids 400 and 500, whose regions a library is mapped over (their names no longer hold there), and 600. */
static bool moved;

/*
 * pid 100 (tids 101-...) names S1 "a" and runs it; pid 200 forks from it and
 * names S2 "b"; 100 execs and names S1 "c"; 100 exits and the pid comes back.
 * elf: the region's file (NULL: a name no file has).
 */
static void write_file(const char *elf, __u64 pgoff, const __u8 *build_id)
{
	struct pd_build_id bid = { .pid = -1, .misc = PERF_RECORD_MISC_USER, .size = PY_ELF_BUILD_ID_SIZE,
				   .filename = (char *)elf };
	struct pd_meta meta = { .hostname = "h", .osrelease = "6.1", .version = "spanperf test", .arch = "x86_64",
				.nr_cpus_avail = 1, .nr_cpus_online = 1, .build_ids = elf ? &bid : NULL,
				.nr_build_ids = elf ? 1 : 0, .clockid = -1 };
	static const __u64 id10[] = { 10 }, idpy[] = { PY_NAMES_ID }, idoff[] = { OFFCPU_ID }, idspan[] = { SPAN_ID_BASE };
	struct file f;

	if (!elf)
		elf = "/nonexistent/python.elf";
	else
		memcpy(bid.id, build_id, PY_ELF_BUILD_ID_SIZE);
	py_names_attr(&pyattr);
	static struct pd_sink sink = { .begin = unit_cap_begin, .write = unit_cap_write };

	assert_int_equal(pd_writer__open(&f.w, path), 0);
	if (capture_to) {
		sink.arg = capture_to;
		pd_writer__set_sink(f.w, &sink);
	}
	assert_int_equal(pd_writer__add_attr(f.w, &cpu, "cpu-clock", id10, 1), 0);
	assert_int_equal(pd_writer__add_attr(f.w, &pyattr, PY_NAMES_EVENT_NAME, idpy, 1), 0);
	offattr = cpu;
	offattr.config = PERF_COUNT_SW_BPF_OUTPUT;
	span_codec_attr(&spanattr);
	assert_int_equal(pd_writer__add_attr(f.w, &offattr, OFFCPU_EVENT_NAME, idoff, 1), 0);
	assert_int_equal(pd_writer__add_attr(f.w, &spanattr, SPAN_ATTR_PREFIX "req", idspan, 1), 0);
	assert_int_equal(pd_writer__begin(f.w), 0);
	comm(&f, 100, 100, 1, "python3", false);
	region(&f, 100, 2, elf, pgoff);
	/* A sample before the record that names its slot, in the same round: named all the same. */
	sample(&f, 100, 101, 40, py_frame_addr(S1, UNITS, 6), py_frame_addr(S1, UNITS, -1));
	name(&f, 100, S1, 50, "a", "/x/app.py", 10);
	sample(&f, 100, 102, 100, py_frame_addr(S1, UNITS, 1), 0);
	/* tid 102 blocked 5 ms in a (off-CPU, as record --off-cpu writes it), and ran a span around its sample. */
	{
		__u64 chain[] = { PD_CONTEXT_USER, py_frame_addr(S1, UNITS, 8), py_frame_addr(S1, UNITS, -1) };
		struct pd_sample off = { .id = OFFCPU_ID, .ip = chain[1], .pid = 100, .tid = 102, .time = 120,
					 .period = 5000000, .callchain_nr = 3, .callchain = chain };
		struct span_rec sp = { .magic = SPAN_REC_MAGIC, .version = SPAN_REC_VERSION, .size = SPAN_REC_SIZE(0),
				       .start_ns = 90, .end_ns = 110, .pid = 100, .tid = 102, .source = SP_SRC_UPROBE };

		put(&f, pd_sample_write(f.buf, sizeof(f.buf), &offattr, PERF_RECORD_MISC_USER, &off));
		put(&f, span_codec_write(f.buf, sizeof(f.buf), &spanattr, &sp));
	}
	round_end(&f);
	/* 200 forks from 100: it sees "a" at S1; it names S2 "b"; 100 never did. */
	task(&f, PERF_RECORD_FORK, 200, 100, 150);
	comm(&f, 200, 200, 150, "python3", false);
	sample(&f, 200, 201, 160, py_frame_addr(S1, UNITS, 7), 0);
	name(&f, 200, S2, 170, "b", "/x/b.py", 30);
	sample(&f, 200, 202, 180, py_frame_addr(S2, UNITS, 0), 0);
	sample(&f, 100, 103, 190, py_frame_addr(S2, UNITS, 0), 0);
	round_end(&f);
	/* 100 execs: "a" is gone from it; it names S1 "c" in its new image, a region of its own in the ELF. */
	comm(&f, 100, 100, 300, "python3", true);
	region(&f, 100, 305, elf, pgoff + REGION_LEN);
	sample(&f, 100, 104, 310, py_frame_addr(S1, UNITS, 2), 0);
	name(&f, 100, S1, 320, "c", "/y/c.py", 40);
	sample(&f, 100, 105, 330, py_frame_addr(S1, UNITS, 8), 0);
	round_end(&f);
	/* 100 exits; a new process takes the pid: none of the old names. */
	task(&f, PERF_RECORD_EXIT, 100, 100, 400);
	task(&f, PERF_RECORD_FORK, 100, 1, 500);
	region(&f, 100, 505, elf, pgoff + 2 * REGION_LEN);
	sample(&f, 100, 106, 510, py_frame_addr(S1, UNITS, 2), 0);
	round_end(&f);
	/* 200 forked before the exec still sees "a" (its parent's at the fork), at any later time. */
	sample(&f, 200, 203, 600, py_frame_addr(S1, UNITS, 3), 0);
	/* pid 300 names S1 "p", and names it again (a live session sees each --switch-output file's copy). */
	task(&f, PERF_RECORD_FORK, 300, 1, 650);
	region(&f, 300, 655, elf, pgoff + 3 * REGION_LEN);
	name(&f, 300, S1, 700, "p", "/z/p.py", 1);
	sample(&f, 300, 301, 710, py_frame_addr(S1, UNITS, 0), 0);
	name(&f, 300, S1, 800, "p", "/z/p.py", 1);
	sample(&f, 300, 302, 810, py_frame_addr(S1, UNITS, 5), 0);
	if (moved) {
		/* pid 400 names S1 "m", then maps a library over its region: that code is the library's; 500 too. */
		struct pd_sideband lib = { .type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER,
					   .sample_id = { .pid = 400, .tid = 400, .time = 900, .id = 10 },
					   .mmap = { .pid = 400, .tid = 400, .start = REGION, .len = 0x10000,
						     .prot = PROT_READ | PROT_EXEC, .flags = MAP_PRIVATE,
						     .filename = "/nonexistent/native.so" } };

		/* The library's map read before the name is applied (one round), then after it (the next). */
		for (__u32 pid = 400; pid <= 500; pid += 100) {
			lib.mmap.pid = lib.mmap.tid = lib.sample_id.pid = lib.sample_id.tid = pid;
			task(&f, PERF_RECORD_FORK, pid, 1, 850);
			region(&f, pid, 855, elf, pgoff + (pid / 100) * REGION_LEN);
			name(&f, pid, S1, 860, "m", "/m/m.py", 1);
			sample(&f, pid, pid + 1, 870, py_frame_addr(S1, UNITS, 0), 0);
			if (pid == 500)
				round_end(&f);
			put(&f, pd_sideband_write(f.buf, sizeof(f.buf), &cpu, &lib));
			sample(&f, pid, pid + 2, 910, py_frame_addr(S1, UNITS, 0), 0);
			round_end(&f);
		}
		/* 600 names S1 "q", then "r" (a recorder that named its slots anew): the same address, two names. */
		task(&f, PERF_RECORD_FORK, 600, 1, 850);
		region(&f, 600, 855, elf, pgoff + 6 * REGION_LEN);
		name(&f, 600, S1, 860, "q", "/q/q.py", 1);
		sample(&f, 600, 601, 870, py_frame_addr(S1, UNITS, 0), 0);
		name(&f, 600, S1, 880, "r", "/r/r.py", 1);
		sample(&f, 600, 602, 890, py_frame_addr(S1, UNITS, 0), 0);
		round_end(&f);
	}
	assert_int_equal(pd_writer__finish(f.w, &meta), 0);
	pd_writer__free(f.w);
}

static const struct pstack *stack_of(const struct profile *p, __u32 tid)
{
	for (size_t i = 0; i < p->nr_stacks; i++)
		if (p->stacks[i].tid == tid)
			return &p->stacks[i];
	fail_msg("no stack of tid %u", tid);
	return NULL;
}

static void expect(const struct profile *p, __u32 tid, int frame, const char *name, const char *srcline)
{
	const struct pstack *s = stack_of(p, tid);

	assert_true((__u32)frame < s->nr);
	assert_string_equal(p->funcs[s->frames[frame].func].name, name);
	if (srcline)
		assert_string_equal(s->frames[frame].srcline, srcline);
}

/* extra: code objects named beyond the file's common ones (test_lookups' pids 400, 500 and 600) */
static void check_lookups(const struct profile *p, struct session *sess, int extra)
{
	expect(p, 101, 0, "py::a:/x/app.py", "app.py:12");
	expect(p, 101, 1, "py::a:/x/app.py", "app.py:10"); /* not started: the first line */
	expect(p, 102, 0, "py::a:/x/app.py", "app.py:10");
	expect(p, 201, 0, "py::a:/x/app.py", "app.py:12"); /* the child, from its parent */
	expect(p, 202, 0, "py::b:/x/b.py", "b.py:30");
	expect(p, 103, 0, "[unknown]", NULL);		   /* the parent never named S2 */
	expect(p, 104, 0, "py::c:/y/c.py", "c.py:40");	   /* after the exec, named later in the same image */
	expect(p, 105, 0, "py::c:/y/c.py", "c.py:42");
	expect(p, 106, 0, "[unknown]", NULL);		   /* the pid reused */
	expect(p, 203, 0, "py::a:/x/app.py", "app.py:10");
	/* The frames' file for pprof and speedscope: the code object's. */
	assert_string_equal(p->funcs[stack_of(p, 101)->frames[0].func].src_file, "/x/app.py");
	assert_string_equal(p->funcs[stack_of(p, 101)->frames[0].func].dso, "python.elf");
	expect(p, 301, 0, "py::p:/z/p.py", "p.py:1");
	expect(p, 302, 0, "py::p:/z/p.py", "p.py:3");
	assert_int_equal(sess->python_bad, 0);
	{
		__u64 named, repeats;

		symbolizer__python_counts(sess->sym, &named, &repeats);
		assert_int_equal(named, 4 + extra);
		assert_int_equal(repeats, 1);
	}
}

static void test_lookups(void **state)
{
	struct session *sess;
	struct profile *p;
	char err[256];

	(void)state;
	moved = true;
	write_file(NULL, 0x1000, NULL);
	moved = false;
	assert_int_equal(session__open(&sess, path, NULL, err, sizeof(err)), 0);
	assert_int_equal(profile__new(&p, sess, &(struct profile_opts){ .srclines = true }), 0);
	assert_int_equal(session__run(sess, err, sizeof(err)), 0);
	assert_int_equal(profile__finish(p), 0);
	check_lookups(p, sess, 4);
	expect(p, 601, 0, "py::q:/q/q.py", "q.py:1");
	expect(p, 602, 0, "py::r:/r/r.py", "r.py:1");
	for (__u32 pid = 400; pid <= 500; pid += 100) {
		expect(p, pid + 1, 0, "py::m:/m/m.py", "m.py:1");
		expect(p, pid + 2, 0, "[unknown]", NULL);
		assert_string_equal(p->funcs[stack_of(p, pid + 2)->frames[0].func].dso, "native.so");
	}
	profile__free(p);
	session__free(sess);
}

/* A live session (top, --pprof-dir) fed the records as written, in odd chunks: the same names, no file. */
static void test_live(void **state)
{
	struct unit_capture cap = {};
	struct session *sess;
	struct profile *p;
	char err[256];

	(void)state;
	capture_to = &cap;
	write_file(NULL, 0x1000, NULL);
	capture_to = NULL;
	unlink(path);
	assert_int_equal(session__open_live(&sess, cap.attrs, cap.nr_attrs,
					    &(struct session_live_opts){ .name = "live" }, err, sizeof(err)), 0);
	assert_int_equal(profile__new(&p, sess, &(struct profile_opts){ .srclines = true }), 0);
	for (size_t o = 0; o < cap.len; o += 37)
		assert_int_equal(session__feed(sess, cap.bytes + o, cap.len - o < 37 ? cap.len - o : 37, err,
					       sizeof(err)), 0);
	assert_int_equal(session__end(sess, err, sizeof(err)), 0);
	assert_int_equal(profile__finish(p), 0);
	check_lookups(p, sess, 0);
	profile__free(p);
	session__free(sess);
	unit_capture_free(&cap);
}

static bool have(const char *what)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", what);
	return !system(cmd);
}

/* Every output of spanperf report names the frames from the records; perf names them from the ELF. */
static void test_outputs(void **state)
{
	struct py_elf *w;
	__u64 pgoff;
	char err[256], cmd[1024], *out;

	(void)state;
	assert_int_equal(py_elf__new(&w, path, PY_ELF_PYTHON, err, sizeof(err)), 0);
	assert_int_equal(py_elf__add_region(w, REGION_LEN, &pgoff), 0);
	assert_int_equal(py_elf__add_symbol(w, pgoff, py_slot_size(UNITS), "py::a:/x/app.py"), 0);
	assert_int_equal(py_elf__add_symbol(w, pgoff + 0x100, py_slot_size(UNITS), "py::b:/x/b.py"), 0);
	{
		__u64 p2, p3;

		assert_int_equal(py_elf__add_region(w, REGION_LEN, &p2), 0);
		assert_int_equal(py_elf__add_region(w, REGION_LEN, &p3), 0);
		assert_int_equal(p2, pgoff + REGION_LEN);
		assert_int_equal(py_elf__add_symbol(w, p2, py_slot_size(UNITS), "py::c:/y/c.py"), 0);
	}
	assert_int_equal(py_elf__commit(w, err, sizeof(err)), 0);
	write_file(py_elf__path(w), pgoff, py_elf__build_id(w));

	snprintf(cmd, sizeof(cmd), "./spanperf report -i %s --folded 2>&1", path);
	out = unit_run(cmd, 1 << 20);
	assert_non_null(strstr(out, "python3;py::a:/x/app.py;py::a:/x/app.py 1"));
	/* 103's S2, named in no record of its process, takes the ELF's symbol there, as perf does. */
	assert_non_null(strstr(out, "python3;py::b:/x/b.py 2"));
	assert_non_null(strstr(out, "python3;py::c:/y/c.py 2"));
	free(out);
	snprintf(cmd, sizeof(cmd), "./spanperf report -i %s --stdio --sort sym,srcline 2>&1", path);
	out = unit_run(cmd, 1 << 20);
	assert_non_null(strstr(out, "py::c:/y/c.py"));
	assert_non_null(strstr(out, "c.py:42"));
	assert_non_null(strstr(out, "app.py:12"));
	free(out);
	/* The flame graph, the off-CPU stacks, a span's top functions. */
	snprintf(cmd, sizeof(cmd), "./spanperf report -i %s --flamegraph %s/f.svg 2>&1; grep -c 'py::c:/y/c.py' %s/f.svg",
		 path, dir, dir);
	out = unit_run(cmd, 1 << 20);
	assert_true(atoi(out) >= 1);
	free(out);
	snprintf(cmd, sizeof(cmd), "./spanperf report -i %s --event off-cpu --folded 2>&1", path);
	out = unit_run(cmd, 1 << 20);
	assert_non_null(strstr(out, "python3;py::a:/x/app.py;py::a:/x/app.py 5000000"));
	free(out);
	snprintf(cmd, sizeof(cmd), "./spanperf report -i %s --spans --format json 2>&1", path);
	out = unit_run(cmd, 1 << 20);
	assert_non_null(strstr(out, "\"top\":[{\"sym\":\"py::a:/x/app.py\",\"samples\":1}]"));
	free(out);
	/* The call graph: each function its own row (two code objects at one address in two images are two). */
	snprintf(cmd, sizeof(cmd), "./spanperf report -i %s --stdio -g --sort sym 2>&1", path);
	out = unit_run(cmd, 1 << 20);
	assert_non_null(strstr(out, "36.36%          4  [.] py::a:/x/app.py"));
	assert_non_null(strstr(out, "18.18%          2  [.] py::b:/x/b.py"));
	assert_non_null(strstr(out, "18.18%          2  [.] py::c:/y/c.py"));
	free(out);
	snprintf(cmd, sizeof(cmd), "./spanperf report -i %s --speedscope %s/s.json 2>&1; cat %s/s.json", path, dir, dir);
	out = unit_run(cmd, 1 << 20);
	assert_non_null(strstr(out, "{\"name\":\"py::b:/x/b.py\",\"file\":\"/x/b.py\"}"));
	free(out);
	snprintf(cmd, sizeof(cmd), "./spanperf report -i %s --html %s/p.html 2>&1; grep -c 'py::c:/y/c.py' %s/p.html",
		 path, dir, dir);
	out = unit_run(cmd, 1 << 20);
	assert_true(atoi(out) >= 1);
	free(out);
	if (have("go")) {
		/* pprof: the function, its file and the line, as go tool pprof reads them. */
		snprintf(cmd, sizeof(cmd),
			 "./spanperf report -i %s --pprof %s/p.pb.gz 2>&1 && go tool pprof -traces %s/p.pb.gz 2>&1", path,
			 dir, dir);
		out = unit_run(cmd, 1 << 20);
		assert_non_null(strstr(out, "py::c:/y/c.py"));
		free(out);
		snprintf(cmd, sizeof(cmd), "go tool pprof -lines -top %s/p.pb.gz 2>&1", dir);
		out = unit_run(cmd, 1 << 20);
		assert_non_null(strstr(out, "py::c:/y/c.py /y/c.py:42"));
		free(out);
	}
	if (have("perf")) {
		/* perf: the same names from the ELF, by region (the exec'd image's S1 is "c"). */
		snprintf(cmd, sizeof(cmd), "HOME=%s perf report -i %s --stdio --no-children -g none --sort sym 2>&1", dir,
			 path);
		out = unit_run(cmd, 1 << 20);
		assert_non_null(strstr(out, "36.36%  [.] py::a:/x/app.py"));
		assert_non_null(strstr(out, "18.18%  [.] py::b:/x/b.py"));
		assert_non_null(strstr(out, "18.18%  [.] py::c:/y/c.py"));
		free(out);
	}
	py_elf__free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lookups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live, setup, teardown),
		cmocka_unit_test_setup_teardown(test_outputs, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
