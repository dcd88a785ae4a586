// SPDX-License-Identifier: GPL-2.0
/*
 * stat's printers on a reading made by hand: perf stat's text layout (the
 * clocks in msec, thousands grouped, rates per task-clock, multiplexed
 * counters scaled with their share) and perf stat -j's JSON lines.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "stat_print.h"

/* task-clock (native), cycles multiplexed half the time, and branches not supported here. */
static void events(struct counter_event ev[3], struct stat_events *evs)
{
	memset(ev, 0, 3 * sizeof(*ev));
	strcpy(ev[0].spec.name, "task-clock");
	ev[0].spec.unit = "msec";
	ev[0].slot = COUNTER_NATIVE;
	strcpy(ev[1].spec.name, "cycles");
	ev[1].slot = 0;
	strcpy(ev[2].spec.name, "branches");
	ev[2].slot = COUNTER_UNSUPPORTED;
	strcpy(ev[2].why, "branches: not supported here");
	evs->ev = ev;
	evs->nr = 3;
}

/* What f printed, as one string (free() it). */
static char *printed(FILE *f)
{
	long n = ftell(f);
	char *s = calloc(1, n + 1);

	rewind(f);
	assert_int_equal(fread(s, 1, n, f), n);
	fclose(f);
	return s;
}

static void reading(struct thread_counts t[2], struct stat_reading *rd)
{
	memset(t, 0, 2 * sizeof(*t));
	t[0] = (struct thread_counts){ .tid = 11, .pid = 10, .comm = "app" };
	t[0].value[0] = 2000000000; /* 2 s on CPU */
	t[0].enabled[0] = t[0].running[0] = 2000000000;
	t[0].value[1] = 1234567;
	t[0].enabled[1] = 1000;
	t[0].running[1] = 500; /* counted half the time: scaled twice over, 50% shown */
	t[1] = (struct thread_counts){ .tid = 12, .pid = 10, .comm = "idle" }; /* nothing: no row */
	memset(rd, 0, sizeof(*rd));
	rd->t = t;
	rd->n = 2;
	for (int k = 0; k < 2; k++) {
		rd->tot.value[k] = t[0].value[k];
		rd->tot.enabled[k] = t[0].enabled[k];
		rd->tot.running[k] = t[0].running[k];
	}
}

static void test_text_totals(void **state)
{
	struct counter_event ev[3];
	struct stat_events evs;
	struct thread_counts t[2];
	struct stat_reading rd;
	struct stat_opts o = {};
	FILE *f = tmpfile();
	char *s;

	(void)state;
	events(ev, &evs);
	reading(t, &rd);
	stat_print(f, &o, &evs, &rd, -1, 4.0);
	s = printed(f);
	assert_non_null(strstr(s, "\n Performance counter stats for 'system wide':\n\n"));
	assert_non_null(strstr(s, "           2000.00 msec task-clock                     #    0.500 CPUs utilized\n"));
	assert_non_null(strstr(s, "         2,469,134      cycles                         #   1234.567 K/sec  (50.00%)\n"));
	assert_non_null(strstr(s, "   <not supported>      branches\n"));
	assert_non_null(strstr(s, "\n       4.000000000 seconds time elapsed\n\nbranches: not supported here\n"));
	free(s);
}

static void test_text_interval_per_thread(void **state)
{
	struct counter_event ev[3];
	struct stat_events evs;
	struct thread_counts t[2];
	struct stat_reading rd;
	struct stat_opts o = { .per_thread = true, .cmd = (char *[]){ "make", "-j8", NULL } };
	FILE *f = tmpfile();
	char *s;

	(void)state;
	events(ev, &evs);
	reading(t, &rd);
	/* An interval: no title, no footer, each row stamped; threads that counted nothing left out. */
	stat_print(f, &o, &evs, &rd, 1.5, 0);
	s = printed(f);
	assert_string_equal(s, "     1.500000000              app-11                 2000.00 msec task-clock                    \n"
			       "     1.500000000              app-11               2,469,134      cycles                         #"
			       "   1234.567 K/sec  (50.00%)\n");
	free(s);
	f = tmpfile();
	stat_print(f, &o, &evs, &rd, -1, 1.0);
	s = printed(f);
	/* -- CMD counts CMD's tree, which perf titles with the command alone. */
	assert_non_null(strstr(s, " Performance counter stats for 'make -j8':\n"));
	free(s);
	/* -a -- CMD: the whole host while it runs. */
	o.all_cpus = true;
	f = tmpfile();
	stat_print(f, &o, &evs, &rd, -1, 1.0);
	s = printed(f);
	assert_non_null(strstr(s, " Performance counter stats for 'make -j8' (system wide):"));
	free(s);
}

static void test_json(void **state)
{
	struct counter_event ev[3];
	struct stat_events evs;
	struct thread_counts t[2];
	struct stat_reading rd;
	struct stat_opts o = { .json = true };
	FILE *f = tmpfile();
	char *s;

	(void)state;
	events(ev, &evs);
	reading(t, &rd);
	stat_print(f, &o, &evs, &rd, 0.25, 0);
	s = printed(f);
	assert_string_equal(s,
		"{\"interval\":0.250000000,\"pid\":10,\"tid\":11,\"comm\":\"app\",\"event\":\"task-clock\","
		"\"counter-value\":2000.000000,\"unit\":\"msec\",\"event-runtime\":2000000000,\"pcnt-running\":100.00}\n"
		"{\"interval\":0.250000000,\"pid\":10,\"tid\":11,\"comm\":\"app\",\"event\":\"cycles\","
		"\"counter-value\":2469134,\"unit\":\"\",\"event-runtime\":500,\"pcnt-running\":50.00}\n"
		"{\"interval\":0.250000000,\"pid\":-1,\"tid\":-1,\"comm\":\"\",\"event\":\"branches\","
		"\"counter-value\":\"<not supported>\",\"unit\":\"\",\"event-runtime\":0,\"pcnt-running\":0.00,"
		"\"reason\":\"branches: not supported here\"}\n");
	free(s);
}

static void test_order(void **state)
{
	struct thread_counts t[3] = { { .tid = 3 }, { .tid = 1 }, { .tid = 2 } };

	(void)state;
	/* Busiest first by the first counter, then by tid. */
	t[0].value[0] = 5;
	t[2].value[0] = 5;
	qsort(t, 3, sizeof(t[0]), stat_cmp_threads);
	assert_int_equal(t[0].tid, 2);
	assert_int_equal(t[1].tid, 3);
	assert_int_equal(t[2].tid, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_totals),
		cmocka_unit_test(test_text_interval_per_thread),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_order),
	};

	return cmocka_run_group_tests_name("stat_print", tests, NULL, NULL);
}
