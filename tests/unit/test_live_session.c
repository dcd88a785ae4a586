// SPDX-License-Identifier: GPL-2.0
/*
 * A recording read while it is made: what a writer's sink gets is the file's
 * data section byte for byte, and a live session fed those bytes in any
 * chunks delivers to its consumers what a session reading the file does, in
 * the same order, windows or not, while the reader keeps about a round.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "unit.h"

#include "perf_data.h"
#include "session.h"
#include "sideband.h"
#include "symbols.h"
#include "util.h"

static char dir[] = "/tmp/spanperf-unit-XXXXXX";
static char path[256];

static const __u64 ST = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;

static void put(struct pd_writer *w, const void *p, long n)
{
	assert_true(n > 0);
	assert_int_equal(pd_writer__write(w, p, n), 0);
}

/*
 * Threads come and go over ROUNDS rounds; samples of each round are out of
 * time order, and some are stamped before the side-band of their round
 * (they wait for it, as perf's ordered events do).
 */
#define ROUNDS 40
#define PER_ROUND 25

static void record(const char *file, struct unit_capture *c)
{
	struct perf_event_attr a0 = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK,
				      .size = sizeof(struct perf_event_attr), .sample_type = ST, .sample_id_all = 1,
				      .comm = 1, .mmap = 1, .mmap2 = 1, .task = 1 };
	struct perf_event_attr a1 = a0;
	static const __u64 ids0[] = { 10, 11 }, ids1[] = { 20 };
	static const __u64 chain[] = { PD_CONTEXT_USER, 0x401000, 0x401100 };
	struct pd_sink sink = { .begin = unit_cap_begin, .write = unit_cap_write, .arg = c };
	unsigned char buf[512];
	struct pd_writer *w;

	a1.config = PERF_COUNT_SW_TASK_CLOCK;
	a1.comm = a1.mmap = a1.mmap2 = a1.task = 0;
	assert_int_equal(pd_writer__open(&w, file), 0);
	pd_writer__set_sink(w, &sink);
	assert_int_equal(pd_writer__add_attr(w, &a0, "cpu-clock", ids0, 2), 0);
	assert_int_equal(pd_writer__add_attr(w, &a1, "task-clock", ids1, 1), 0);
	assert_int_equal(pd_writer__begin(w), 0);
	for (int r = 0; r < ROUNDS; r++) {
		__u32 pid = 1000 + r, tid = 1000 + r;
		__u64 t0 = 1000000ull * (r + 1);
		struct pd_sample ts = { .pid = 1, .tid = 1, .time = t0, .id = 10 };
		char comm[16];

		snprintf(comm, sizeof(comm), "worker%d", r);
		put(w, buf, pd_sideband_write(buf, sizeof(buf), &a0, &(struct pd_sideband){ .type = PERF_RECORD_FORK,
			.task = { .pid = pid, .ppid = 1, .tid = tid, .ptid = 1, .time = t0 }, .sample_id = ts }));
		ts.pid = ts.tid = pid;
		ts.time = t0 + 10;
		put(w, buf, pd_sideband_write(buf, sizeof(buf), &a0, &(struct pd_sideband){ .type = PERF_RECORD_COMM,
			.misc = PERF_RECORD_MISC_COMM_EXEC, .comm = { .pid = pid, .tid = tid, .comm = comm },
			.sample_id = ts }));
		put(w, buf, pd_sideband_write(buf, sizeof(buf), &a0, &(struct pd_sideband){ .type = PERF_RECORD_MMAP2,
			.misc = PERF_RECORD_MISC_USER, .mmap = { .pid = pid, .tid = tid, .start = 0x400000, .len = 0x2000,
			.maj = 8, .ino = 99, .prot = 5, .flags = 2, .filename = "/bin/true" }, .sample_id = ts }));
		for (int i = 0; i < PER_ROUND; i++) {
			/* Backwards in time within a round, and the first few before the COMM. */
			struct pd_sample s = { .id = i % 3 ? 10 : 20, .ip = 0x401000 + i, .pid = pid, .tid = tid,
					       .time = t0 + 5 + 100 * (PER_ROUND - 1 - i), .cpu = i % 2, .period = 1,
					       .callchain_nr = 3, .callchain = chain };

			put(w, buf, pd_sample_write(buf, sizeof(buf), i % 3 ? &a0 : &a1, PERF_RECORD_MISC_USER, &s));
		}
		/* The thread of three rounds ago exits. */
		if (r >= 3) {
			ts.pid = ts.tid = pid - 3;
			ts.time = t0 + 999;
			put(w, buf, pd_sideband_write(buf, sizeof(buf), &a0, &(struct pd_sideband){
				.type = PERF_RECORD_EXIT, .sample_id = ts,
				.task = { .pid = pid - 3, .ppid = 1, .tid = tid - 3, .ptid = 1, .time = t0 + 999 } }));
		}
		put(w, buf, pd_sideband_write(buf, sizeof(buf), NULL, &(struct pd_sideband){ .type = PD_RECORD_FINISHED_ROUND }));
	}
	if (file)
		assert_int_equal(pd_writer__finish(w, NULL), 0);
	pd_writer__free(w);
}

/* A consumer that notes each delivery: the sample's time, thread, attr and name, in order. */
struct delivery {
	__u64 time;
	__u32 tid;
	int attr;
	char comm[16];
};

struct log {
	struct delivery *d;
	size_t n, cap;
	int finished;
};

static int on_sample(void *ctx, const struct sess_sample *s)
{
	struct log *l = ctx;

	assert_int_equal(array_reserve((void **)&l->d, &l->cap, l->n, sizeof(*l->d)), 0);
	l->d[l->n] = (struct delivery){ .time = s->ev->sample.time, .tid = s->ev->sample.tid, .attr = s->attr };
	snprintf(l->d[l->n].comm, sizeof(l->d[l->n].comm), "%s", s->comm);
	l->n++;
	return 0;
}

static int on_finish(void *ctx)
{
	((struct log *)ctx)->finished++;
	return 0;
}

static const struct session_ops log_ops = { .sample = on_sample, .finish = on_finish };

static void assert_same(const struct log *a, const struct log *b)
{
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		assert_int_equal(a->d[i].time, b->d[i].time);
		assert_int_equal(a->d[i].tid, b->d[i].tid);
		assert_int_equal(a->d[i].attr, b->d[i].attr);
		assert_string_equal(a->d[i].comm, b->d[i].comm);
	}
}

UNIT_SCRATCH(dir, path)

/* The file read whole, by session__run. */
static void read_file(struct log *whole)
{
	struct session *s;
	char err[256];

	assert_int_equal(session__open(&s, path, NULL, err, sizeof(err)), 0);
	assert_int_equal(session__process(s, &log_ops, whole, err, sizeof(err)), 0);
	session__free(s);
	assert_int_equal(whole->n, ROUNDS * PER_ROUND);
	assert_int_equal(whole->finished, 1);
}

static struct session *live(const struct unit_capture *c)
{
	struct session_live_opts o = { .name = "the test's recording", .keep_tables = 4, .keep_syms = 1000 };
	struct session *s;
	char err[256];

	assert_int_equal(session__open_live(&s, c->attrs, c->nr_attrs, &o, err, sizeof(err)), 0);
	return s;
}

static void test_sink_gets_the_data_section(void **state)
{
	struct unit_capture c = {};
	struct pd_reader *r;
	char err[256];

	(void)state;
	record(path, &c);
	assert_int_equal(pd_reader__open(&r, path, NULL, err, sizeof(err)), 0);
	assert_int_equal(c.nr_attrs, r->nr_attrs);
	assert_string_equal(c.attrs[1].name, "task-clock");
	assert_int_equal(c.len, r->data_size);
	assert_memory_equal(c.bytes, r->data, c.len);
	pd_reader__free(r);
	unit_capture_free(&c);
}

/* The same deliveries, in the same order, whatever the chunks the records come in. */
static void test_fed_in_chunks_as_read_whole(void **state)
{
	static const size_t chunks[] = { 1, 3, 8, 13, 64, 100, 4096, 1 << 20 };
	struct log whole = {};
	struct unit_capture c = {};

	(void)state;
	record(path, &c);
	read_file(&whole);
	for (size_t k = 0; k < ARRAY_SIZE(chunks); k++) {
		struct session *s = live(&c);
		struct log fed = {};
		char err[256];

		assert_int_equal(session__add_consumer(s, &log_ops, &fed), 0);
		for (size_t off = 0; off < c.len; off += chunks[k])
			assert_int_equal(session__feed(s, c.bytes + off, SP_MIN(chunks[k], c.len - off), err, sizeof(err)), 0);
		/* Read and let go: the reader holds about what the last rounds left, not the stream. */
		assert_true(s->rd->data_size == c.len);
		assert_true(s->rd->data_size - s->rd->base < c.len / 4);
		assert_int_equal(session__end(s, err, sizeof(err)), 0);
		assert_same(&whole, &fed);
		assert_int_equal(fed.finished, 1);
		session__free(s);
		free(fed.d);
	}
	free(whole.d);
	unit_capture_free(&c);
}

/*
 * Windows: consumers ended and added while the stream goes on.  Each
 * window gets what was fed in it (flushed at its end), and the windows
 * together get what the file gives, in its order.
 */
static void test_windows_split_the_deliveries(void **state)
{
	struct log whole = {}, w[4] = {}, all = {};
	struct unit_capture c = {};
	struct session *s;
	char err[256];
	size_t quarter;

	(void)state;
	record(path, &c);
	read_file(&whole);
	s = live(&c);
	quarter = c.len / 4;
	for (int k = 0; k < 4; k++) {
		size_t from = k * quarter, to = k == 3 ? c.len : from + quarter;

		assert_int_equal(session__add_consumer(s, &log_ops, &w[k]), 0);
		assert_int_equal(session__feed(s, c.bytes + from, to - from, err, sizeof(err)), 0);
		assert_int_equal(session__flush(s, err, sizeof(err)), 0);
		assert_int_equal(session__end_consumer(s, &w[k], true), 0);
		session__trim(s);
		assert_int_equal(w[k].finished, 1);
		assert_true(w[k].n > 0);
		for (size_t i = 0; i < w[k].n; i++) {
			assert_int_equal(array_reserve((void **)&all.d, &all.cap, all.n, sizeof(*all.d)), 0);
			all.d[all.n++] = w[k].d[i];
		}
	}
	assert_int_equal(session__end(s, err, sizeof(err)), 0);
	/* In the file's order, with the names of then: threads let go after they exited were done with. */
	assert_same(&whole, &all);
	session__free(s);
	for (int k = 0; k < 4; k++)
		free(w[k].d);
	free(all.d);
	free(whole.d);
	unit_capture_free(&c);
}

/* A writer with no file: the sink alone gets the records, the same bytes. */
static void test_writer_without_a_file(void **state)
{
	struct unit_capture with = {}, without = {};

	(void)state;
	record(path, &with);
	record(NULL, &without);
	assert_int_equal(with.len, without.len);
	assert_memory_equal(with.bytes, without.bytes, with.len);
	unit_capture_free(&with);
	unit_capture_free(&without);
}

/* A record cut short waits for the rest; one that could never be whole is an error naming it. */
static void test_partial_and_bad_records(void **state)
{
	struct unit_capture c = {};
	struct pd_reader *r;
	struct pd_iter it = {};
	struct pd_event ev;
	struct perf_event_header bad = { .type = PERF_RECORD_SAMPLE, .size = 12 };
	char err[256];
	size_t first;

	(void)state;
	record(NULL, &c);
	assert_int_equal(pd_reader__open_mem(&r, c.attrs, c.nr_attrs, "the stream", err, sizeof(err)), 0);
	first = ((const struct perf_event_header *)c.bytes)->size;
	assert_int_equal(pd_reader__append(r, c.bytes, 5), 0);
	assert_int_equal(pd_reader__next(r, &it, &ev), 0);
	assert_int_equal(pd_reader__append(r, c.bytes + 5, first - 6), 0);
	assert_int_equal(pd_reader__next(r, &it, &ev), 0);
	assert_int_equal(pd_reader__append(r, c.bytes + first - 1, 1), 0);
	assert_int_equal(pd_reader__next(r, &it, &ev), 1);
	assert_int_equal(ev.hdr->type, PERF_RECORD_FORK);
	pd_reader__release(r, it.pos);
	pd_reader__free(r);
	assert_int_equal(pd_reader__open_mem(&r, c.attrs, c.nr_attrs, "the stream", err, sizeof(err)), 0);
	assert_int_equal(pd_reader__append(r, &bad, sizeof(bad)), 0);
	it.pos = 0;
	assert_int_equal(pd_reader__next(r, &it, &ev), -EINVAL);
	assert_non_null(strstr(r->err, "the stream"));
	pd_reader__free(r);
	unit_capture_free(&c);
}

/* Something of this file's own to find by name. */
__attribute__((noinline)) int live_fixture_function(int x)
{
	return x * 3 + 1;
}

static bool names(struct symbolizer *s, __s32 pid, __u64 ip, __u64 t, const char *want)
{
	struct sym out;

	symbolizer__resolve(s, pid, ip, t, false, &out);
	return out.known && !strcmp(out.name, want);
}

/* The name ip resolves to, copied (libc names its functions as its version likes). */
static void name_of(struct symbolizer *s, __s32 pid, __u64 ip, __u64 t, char *buf, size_t len)
{
	struct sym out;

	symbolizer__resolve(s, pid, ip, t, false, &out);
	assert_true(out.known);
	snprintf(buf, len, "%s", out.name);
}

/*
 * A symbolizer that lives across windows: its tables bounded (the one used
 * last kept, the others loaded again when asked), and the processes that
 * exited let go, but not while one forked from them lives, nor once their
 * pid comes back.
 */
static void test_symbolizer_trims(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL, NULL);
	int (*volatile fn)(int) = live_fixture_function;
	__u64 mine = (__u64)(uintptr_t)fn, libc = (__u64)(uintptr_t)getpid;
	char libc_name[256];

	(void)state;
	assert_non_null(s);
	symbolizer__keep_tables(s, 1, 1u << 30);
	unit_self_maps(s, 1234, 1);
	assert_true(names(s, 1234, mine, 5, "live_fixture_function"));
	name_of(s, 1234, libc, 5, libc_name, sizeof(libc_name));
	symbolizer__trim(s); /* one of the two tables goes: both still name what they named */
	assert_true(names(s, 1234, mine, 5, "live_fixture_function"));
	symbolizer__trim(s);
	assert_true(names(s, 1234, libc, 5, libc_name));

	assert_int_equal(symbolizer__fork(s, 1234, 77, 10), 0);
	symbolizer__exit(s, 1234, 50);
	symbolizer__trim(s);
	assert_true(names(s, 77, mine, 60, "live_fixture_function")); /* 77 reads its parent's maps */
	symbolizer__exit(s, 77, 70);
	symbolizer__trim(s);
	assert_false(names(s, 77, mine, 60, "live_fixture_function"));
	assert_false(names(s, 1234, mine, 5, "live_fixture_function"));

	unit_self_maps(s, 555, 1);
	symbolizer__exit(s, 555, 50);
	unit_self_maps(s, 555, 80); /* pid 555 again, before the trim */
	symbolizer__trim(s);
	assert_true(names(s, 555, mine, 90, "live_fixture_function"));
	symbolizer__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sink_gets_the_data_section),
		cmocka_unit_test(test_fed_in_chunks_as_read_whole),
		cmocka_unit_test(test_windows_split_the_deliveries),
		cmocka_unit_test(test_writer_without_a_file),
		cmocka_unit_test(test_partial_and_bad_records),
		cmocka_unit_test(test_symbolizer_trims),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
