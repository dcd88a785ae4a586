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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overlap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
