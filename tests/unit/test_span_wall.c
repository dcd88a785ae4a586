// SPDX-License-Identifier: GPL-2.0
/* A span's time off CPU: its thread's blocks clipped to it; sums of short blocks left out. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "offcpu.h"
#include "sched_codec.h"
#include "span_wall.h"

/* A session that holds one offcpu-time attr and nothing else: what span_wall reads of it. */
static struct pd_reader rd = { .nr_attrs = 1 };
static enum sess_kind kinds[1] = { SESS_OFFCPU };
static struct session sess = { .rd = &rd, .kind = kinds };

static void add(struct span_wall *w, __u32 tid, __u64 end, __u64 ns, bool sum)
{
	static const __u64 chain[] = { PD_CONTEXT_USER, 0x1000 };
	struct pd_event ev = { .sample = { .tid = tid, .pid = tid, .time = end, .period = ns,
					    .cpu_res = sum ? OFFCPU_RES_SUM : 0, .callchain_nr = 2,
					    .callchain = chain } };
	struct sess_sample ss = { .ev = &ev, .kind = SESS_OFFCPU };

	assert_int_equal(span_wall__add(w, &ss), 0);
}

static void test_overlap(void **state)
{
	struct span_wall *w;

	(void)state;
	assert_int_equal(span_wall__new(&w, &sess), 0);
	assert_true(span_wall__recorded(w));
	/* tid 7 blocked [100, 200) and [300, 350); tid 8 [100, 400); added out of order. */
	add(w, 7, 350, 50, false);
	add(w, 8, 400, 300, false);
	add(w, 7, 200, 100, false);
	add(w, 7, 1000, 999, true); /* a sum: no interval */
	span_wall__finish(w);
	assert_int_equal(span_wall__off_ns(w, 7, 0, 1000), 150);
	assert_int_equal(span_wall__off_ns(w, 7, 150, 320), 50 + 20); /* clipped at both ends */
	assert_int_equal(span_wall__off_ns(w, 7, 200, 300), 0);	 /* between the blocks */
	assert_int_equal(span_wall__off_ns(w, 8, 0, 150), 50);
	assert_int_equal(span_wall__off_ns(w, 9, 0, 1000), 0);
	assert_int_equal(span_wall__unjoinable(w), 1);
	span_wall__free(w);
	span_wall__free(NULL);
}

static enum sess_kind sched_kinds[1] = { SESS_SCHED };
static struct session sched_sess = { .rd = &rd, .kind = sched_kinds };

/* One spanperf-sched record: tid off CPU [end - ns, end] in state, run_delay rd at its switch-out. */
static void add_sched(struct span_wall *w, __u32 tid, __u64 end, __u64 ns, __u32 state, __u64 rd, bool has_rd)
{
	struct sched_rec rec = { .magic = SCHED_REC_MAGIC, .version = 1, .size = sizeof(rec), .state = state,
				 .flags = has_rd ? SCHED_HAS_RUN_DELAY : 0, .run_delay = rd };
	char raw[sizeof(rec) + 4] = {};
	struct pd_event ev = { .sample = { .tid = tid, .pid = tid, .time = end, .period = ns, .raw = raw,
					    .raw_size = sizeof(raw) } };
	struct sess_sample ss = { .ev = &ev, .kind = SESS_SCHED };

	memcpy(raw, &rec, sizeof(rec));
	assert_int_equal(span_wall__add(w, &ss), 0);
}

/*
 * tid 7: asleep [100, 300) of which the last 50 in the run queue (run_delay
 * 1000 at its switch-out, 1050 at the next), preempted [400, 450), then
 * asleep [600, 700) with no next record.
 */
static void test_sched_split(void **state)
{
	struct span_split x;
	struct span_wall *w;

	(void)state;
	assert_int_equal(span_wall__new(&w, &sched_sess), 0);
	assert_true(span_wall__has_sched(w) && !span_wall__recorded(w));
	add_sched(w, 7, 450, 50, 0, 1050, true);
	add_sched(w, 7, 300, 200, 1, 1000, true);
	add_sched(w, 7, 700, 100, 2, 1100, true);
	add_sched(w, 8, 300, 200, 1, 0, false); /* no sched_info */
	span_wall__finish(w);
	assert_true(span_wall__sched_split(w, 7, 0, 500, &x));
	/* on [0,100) [300,400) [450,500); sleep [100,250); runq [250,300) and [400,450). */
	assert_true(x.on == 250 && x.sleep == 150 && x.runq == 100 && x.blocked == 0 && x.off == 150);
	assert_true(span_wall__sched_split(w, 7, 200, 275, &x)); /* clipped: 50 asleep, 25 queued */
	assert_true(x.sleep == 50 && x.runq == 25 && x.on == 0);
	assert_true(span_wall__sched_split(w, 7, 460, 590, &x) && x.on == 130); /* between records */
	/* Over the last record, or one without run_delay: no split rather than a wrong one. */
	assert_false(span_wall__sched_split(w, 7, 500, 800, &x));
	assert_false(span_wall__sched_split(w, 8, 0, 400, &x));
	span_wall__free(w);
}

/* A span's own split: the accounts' and the stamps' alike; old files' on-CPU-only stamps give none. */
static void test_split_of(void **state)
{
	struct span_sched acc = { .on_ns = 300, .runq_ns = 500, .blocked_ns = 100, .how = SP_SCHED_ACCOUNTS };
	struct span_sched st = { .on_ns = 300, .runq_ns = 800, .blocked_ns = 100, .how = SP_SCHED_WAKE_STAMPS };
	struct span_sched old = { .on_ns = 300, .how = SP_SCHED_STAMPS };
	struct span_split x = { .on = 7 };

	(void)state;
	assert_true(span_split_of(&acc, 1000, &x));
	assert_true(x.on == 300 && x.runq == 500 && x.off == 200 && x.blocked == 100 && x.sleep == 100);
	/* Stamps past the wall (clocks a few us apart) are clipped: the parts never exceed it. */
	assert_true(span_split_of(&st, 1000, &x));
	assert_true(x.on == 300 && x.runq == 700 && x.off == 0 && x.blocked == 0 && x.sleep == 0);
	x.on = 7;
	assert_false(span_split_of(&old, 1000, &x));
	assert_int_equal(x.on, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_sched_split),
		cmocka_unit_test(test_split_of),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
