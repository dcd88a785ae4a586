// SPDX-License-Identifier: GPL-2.0
/* perf.data writer and reader: a file written here reads back the same. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "unit.h"

#include "perf_data.h"

static char dir[] = "/tmp/spanperf-unit-XXXXXX";
static char path[256];

static const __u64 ST = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;

static struct perf_event_attr mk_attr(__u32 type, __u64 config)
{
	return (struct perf_event_attr){ .type = type, .config = config, .size = sizeof(struct perf_event_attr),
					 .sample_type = ST, .sample_id_all = 1, .freq = 1, .sample_freq = 999 };
}

UNIT_SCRATCH(dir, path)

/* Writes: 2 attrs, a COMM, an MMAP2, n samples, features. */
static void write_file(int nsamples, const char *host)
{
	struct perf_event_attr a0 = mk_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
	struct perf_event_attr a1 = mk_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS);
	static const __u64 ids0[] = { 10, 11 }, ids1[] = { 20, 21 };
	static const __u64 chain[] = { PD_CONTEXT_USER, 0x401000, 0x401100 };
	struct pd_build_id bid = { .pid = -1, .misc = PERF_RECORD_MISC_USER, .size = 20,
				   .id = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 },
				   .filename = "/bin/true" };
	char *argv[] = { "spanperf", "record", "-g" };
	struct pd_digest dg = { .size = 20, .id = { 1, 2, 3 }, .sha256 = { [0] = 0xaa, [31] = 0xbb } };
	struct pd_jit_map jm = { .pid = 42, .text = "7f0000001000 10 jitted_fn\n", .len = 26 };
	/* A key this reader does not know (a newer recorder's) is kept and shown as it is. */
	struct pd_count unwind[] = { { "chains", 10 }, { "complete", 8 }, { "read_fault", 1 }, { "new_reason", 1 } };
	struct pd_meta meta = {
		.hostname = (char *)host, .osrelease = "6.18", .version = "spanperf test", .arch = "x86_64",
		.cpudesc = "Test CPU", .cpuid = "GenuineIntel,6,85,7", .nr_cpus_avail = 4,
		.nr_cpus_online = 2, .total_mem_kb = 1234, .cmdline_argc = 3, .cmdline_argv = argv,
		.build_ids = &bid, .nr_build_ids = 1, .first_sample_ns = 1000, .last_sample_ns = 5000,
		.clockid = 1, .clockid_res_ns = 1, .clock_tod_ns = 7, .clock_ref_ns = 8,
		.digests = &dg, .nr_digests = 1, .jit_maps = &jm, .nr_jit_maps = 1,
		.unwind = unwind, .nr_unwind = 4,
	};
	struct pd_writer *w;
	unsigned char buf[512];
	struct pd_sample ts = { .pid = 100, .tid = 100, .time = 1, .id = 10 };
	struct pd_sideband comm = { .type = PERF_RECORD_COMM, .comm = { 100, 101, "worker" }, .sample_id = ts };
	struct pd_sideband mmap2 = { .type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER, .sample_id = ts,
				     .mmap = { .pid = 100, .tid = 100, .start = 0x400000, .len = 0x2000, .maj = 8,
					       .min = 1, .ino = 99, .prot = 5, .flags = 2, .filename = "/bin/true" } };
	long n;

	assert_int_equal(pd_writer__open(&w, path), 0);
	assert_int_equal(pd_writer__add_attr(w, &a0, "cpu-clock", ids0, 2), 0);
	assert_int_equal(pd_writer__add_attr(w, &a1, "page-faults", ids1, 2), 0);
	assert_int_equal(pd_writer__begin(w), 0);
	n = pd_sideband_write(buf, sizeof(buf), &a0, &comm);
	assert_int_equal(pd_writer__write(w, buf, n), 0);
	n = pd_sideband_write(buf, sizeof(buf), &a0, &mmap2);
	assert_int_equal(pd_writer__write(w, buf, n), 0);
	for (int i = 0; i < nsamples; i++) {
		struct pd_sample s = { .id = i % 2 ? 21 : 10, .ip = 0x401000, .pid = 100, .tid = 101,
				       .time = 1000 + i, .cpu = i % 2, .period = 1001, .callchain_nr = 3,
				       .callchain = chain };

		n = pd_sample_write(buf, sizeof(buf), i % 2 ? &a1 : &a0, PERF_RECORD_MISC_USER, &s);
		assert_true(n > 0);
		assert_int_equal(pd_writer__write(w, buf, n), 0);
	}
	assert_int_equal(pd_writer__finish(w, &meta), 0);
	pd_writer__free(w);
}

static void test_round_trip(void **state)
{
	struct pd_reader *r;
	struct pd_iter it = {};
	struct pd_event ev;
	char err[256];
	int samples = 0, comms = 0, mmaps = 0, e;
	struct stat st;

	(void)state;
	write_file(100, "host-a");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(pd_reader__open(&r, path, NULL, err, sizeof(err)), 0);
	assert_int_equal(r->nr_attrs, 2);
	assert_string_equal(r->attrs[0].name, "cpu-clock");
	assert_string_equal(r->attrs[1].name, "page-faults");
	assert_int_equal(r->attrs[1].nr_ids, 2);
	assert_int_equal(r->attrs[1].ids[1], 21);
	assert_int_equal(r->attrs[0].attr.size, PD_ATTR_SIZE);
	assert_ptr_equal(pd_reader__attr_by_id(r, 21), &r->attrs[1]);
	assert_null(pd_reader__attr_by_id(r, 99));
	assert_string_equal(r->meta.hostname, "host-a");
	assert_string_equal(r->meta.osrelease, "6.18");
	assert_string_equal(r->meta.arch, "x86_64");
	assert_string_equal(r->meta.cpudesc, "Test CPU");
	assert_string_equal(r->meta.cpuid, "GenuineIntel,6,85,7");
	assert_int_equal(r->meta.nr_cpus_avail, 4);
	assert_int_equal(r->meta.nr_cpus_online, 2);
	assert_int_equal(r->meta.total_mem_kb, 1234);
	assert_int_equal(r->meta.cmdline_argc, 3);
	assert_string_equal(r->meta.cmdline_argv[2], "-g");
	assert_int_equal(r->meta.nr_unwind, 4);
	assert_string_equal(r->meta.unwind[2].key, "read_fault");
	assert_int_equal(r->meta.unwind[2].value, 1);
	assert_true(pd_reader__has_feature(r, PD_FEAT_SP_UNWIND));
	assert_int_equal(r->meta.nr_build_ids, 1);
	assert_string_equal(r->meta.build_ids[0].filename, "/bin/true");
	assert_int_equal(r->meta.build_ids[0].pid, -1);
	assert_int_equal(r->meta.build_ids[0].size, 20);
	assert_int_equal(r->meta.build_ids[0].id[19], 20);
	/* spanperf's own features: the cache entries' digests and the JIT maps kept. */
	assert_int_equal(r->meta.nr_digests, 1);
	assert_int_equal(r->meta.digests[0].size, 20);
	assert_int_equal(r->meta.digests[0].id[2], 3);
	assert_int_equal(r->meta.digests[0].sha256[31], 0xbb);
	assert_int_equal(r->meta.nr_jit_maps, 1);
	assert_int_equal(r->meta.jit_maps[0].pid, 42);
	assert_int_equal(r->meta.jit_maps[0].len, 26);
	assert_string_equal(r->meta.jit_maps[0].text, "7f0000001000 10 jitted_fn\n");
	assert_true(r->have_sample_time);
	assert_int_equal(r->meta.last_sample_ns, 5000);
	assert_int_equal(r->meta.clockid, 1);
	assert_int_equal(r->meta.clock_ref_ns, 8);
	assert_true(pd_reader__has_feature(r, PD_FEAT_EVENT_DESC));
	while ((e = pd_reader__next(r, &it, &ev)) > 0) {
		switch (ev.hdr->type) {
		case PERF_RECORD_SAMPLE:
			assert_int_equal(ev.sample.tid, 101);
			assert_int_equal(ev.sample.time, 1000 + samples);
			assert_ptr_equal(ev.attr, &r->attrs[samples % 2]);
			assert_int_equal(ev.sample.callchain_nr, 3);
			assert_int_equal(ev.sample.callchain[2], 0x401100);
			samples++;
			break;
		case PERF_RECORD_COMM:
			assert_string_equal((const char *)ev.hdr + 16, "worker");
			assert_int_equal(ev.sample.id, 10);
			comms++;
			break;
		case PERF_RECORD_MMAP2:
			mmaps++;
			break;
		}
	}
	assert_int_equal(e, 0);
	assert_int_equal(samples, 100);
	assert_int_equal(comms, 1);
	assert_int_equal(mmaps, 1);
	pd_reader__free(r);
}

static void test_old_kept(void **state)
{
	struct pd_reader *r;
	char old[300], err[256];

	(void)state;
	write_file(1, "first");
	write_file(1, "second");
	snprintf(old, sizeof(old), "%s.old", path);
	assert_int_equal(pd_reader__open(&r, old, NULL, err, sizeof(err)), 0);
	assert_string_equal(r->meta.hostname, "first");
	pd_reader__free(r);
	assert_int_equal(pd_reader__open(&r, path, NULL, err, sizeof(err)), 0);
	assert_string_equal(r->meta.hostname, "second");
	pd_reader__free(r);
}

static int count_tmp_files(void)
{
	char cmd[300];
	FILE *f;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "ls %s | grep -c tmp-", dir);
	f = popen(cmd, "r");
	if (f && fscanf(f, "%d", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	return n;
}

static void test_abandoned_leaves_nothing(void **state)
{
	struct perf_event_attr a = mk_attr(PERF_TYPE_SOFTWARE, 0);
	__u64 id = 1;
	struct pd_writer *w;
	char p2[300];

	(void)state;
	snprintf(p2, sizeof(p2), "%s/never.data", dir);
	assert_int_equal(pd_writer__open(&w, p2), 0);
	assert_int_equal(pd_writer__add_attr(w, &a, "x", &id, 1), 0);
	assert_int_equal(pd_writer__begin(w), 0);
	assert_int_equal(count_tmp_files(), 1);
	pd_writer__free(w); /* no finish: an error path */
	assert_int_equal(count_tmp_files(), 0);
	assert_int_equal(access(p2, F_OK), -1);
	pd_writer__free(NULL);
}

static void test_unwritable_dir(void **state)
{
	struct pd_writer *w;

	(void)state;
	assert_int_equal(pd_writer__open(&w, "/nonexistent-dir/perf.data"), -ENOENT);
	assert_null(w);
}

static void test_unfinished_and_truncated(void **state)
{
	struct perf_event_attr a = mk_attr(PERF_TYPE_SOFTWARE, 0);
	struct pd_reader *r;
	struct pd_writer *w;
	char err[256], cut[1024];
	__u64 id = 1;
	struct stat st;

	(void)state;
	/* A writer that died before finish() leaves a zero header: refused by name. */
	assert_int_equal(pd_writer__open(&w, path), 0);
	assert_int_equal(pd_writer__add_attr(w, &a, "x", &id, 1), 0);
	assert_int_equal(pd_writer__begin(w), 0);
	assert_int_not_equal(pd_reader__open(&r, pd_writer__tmp_path(w), NULL, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "PERFILE2"));
	pd_writer__free(w);

	write_file(50, "cut");
	assert_int_equal(stat(path, &st), 0);
	snprintf(cut, sizeof(cut), "cp %s %s.cut && truncate -s %lld %s.cut", path, path,
		 (long long)st.st_size / 2, path);
	assert_int_equal(system(cut), 0);
	snprintf(cut, sizeof(cut), "%s.cut", path);
	assert_int_not_equal(pd_reader__open(&r, cut, NULL, err, sizeof(err)), 0);
	assert_non_null(strstr(err, cut));
	assert_non_null(strstr(err, "past its end"));
}

/* Each feature prints as perf report --header-only prints it (checked against perf 6.1). */
static void test_print_features(void **state)
{
	static const char want[] =
		"# hostname : host-p\n"
		"# os release : 6.18\n"
		"# perf version : spanperf test\n"
		"# arch : x86_64\n"
		"# nrcpus online : 2\n"
		"# nrcpus avail : 4\n"
		"# cpudesc : Test CPU\n"
		"# cpuid : GenuineIntel,6,85,7\n"
		"# total memory : 1234 kB\n"
		"# cmdline : spanperf record -g \n"
		"# event : name = cpu-clock, , id = { 10, 11 }, type = 1, size = 128\n"
		"# event : name = page-faults, , id = { 20, 21 }, type = 1, size = 128, config = 0x2\n"
		"# time of first sample : 0.000001\n"
		"# time of last sample : 0.000005\n"
		"# sample duration :      0.004 ms\n"
		"# clockid frequency: 1000 MHz\n"
		"# clockid: monotonic (1)\n"
		"# reference time: 1970-01-01 00:00:00.000000 = 0.000000 (TOD) = 0.000000008 (monotonic)\n"
		"# spanperf build-id cache entries: 1, each used only if its bytes have the SHA-256 kept here\n"
		"# spanperf JIT perf maps kept from containers: 1\n"
		"# spanperf unwind (--call-graph ehframe), why user chains ended:\n"
		"#   user chains                                                10\n"
		"#   complete (reached the outermost frame)                     8\n"
		"#   stopped: stack unreadable                                  1\n"
		"#   new_reason                                                 1\n";
	struct pd_reader *r;
	char err[256], *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	setenv("TZ", "UTC", 1);
	write_file(4, "host-p");
	assert_int_equal(pd_reader__open(&r, path, NULL, err, sizeof(err)), 0);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	pd_reader__print_features(r, f);
	fclose(f);
	assert_string_equal(text, want);
	free(text);
	pd_reader__free(r);
}

/* perf's rule: another user's file is theirs to craft, and is read only when asked (report --force). */
static void test_owner(void **state)
{
	const struct pd_reader_opts any = { .any_owner = true };
	struct pd_reader *r;
	char err[256];

	(void)state;
	if (geteuid() != 0)
		skip();
	write_file(4, "host-c");
	assert_int_equal(chown(path, 12345, 12345), 0);
	assert_int_equal(pd_reader__open(&r, path, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "owned by uid 12345"));
	/* The asking is the one reader's: the next open without it refuses again. */
	assert_int_equal(pd_reader__open(&r, path, &any, err, sizeof(err)), 0);
	assert_true(r->map_copied);
	pd_reader__free(r);
	assert_int_equal(pd_reader__open(&r, path, &(struct pd_reader_opts){}, err, sizeof(err)), -EPERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_old_kept),
		cmocka_unit_test(test_abandoned_leaves_nothing),
		cmocka_unit_test(test_unwritable_dir),
		cmocka_unit_test(test_unfinished_and_truncated),
		cmocka_unit_test(test_print_features),
		cmocka_unit_test(test_owner),
	};

	return cmocka_run_group_tests_name("perf_data", tests, setup, teardown);
}
