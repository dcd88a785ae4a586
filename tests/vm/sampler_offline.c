// SPDX-License-Identifier: GPL-2.0
/*
 * libspanperf's sampler on a machine with a CPU offline (the QEMU guest,
 * booted with one CPU and possible_cpus=2: CPU 1 may come, and is offline).  Opened on CPUs 0 and 1, the sampler must skip CPU 1 and open CPU 0
 * alone, whose event then counts our own spin; opened on the CPUs online
 * (none given), CPU 0 alone; opened on CPU 1 alone, it must fail with
 * -ENODEV, say so, and leave no descriptor.  Prints one line; exits 1 when
 * a check fails.
 *
 *	sampler_offline
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "spanperf/spanperf.h"

static volatile unsigned long sink;

static int fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static int fail(const char *what)
{
	printf("%s\n", what);
	return 1;
}

int main(void)
{
	static const int both[] = { 0, 1 }, second[] = { 1 };
	struct spanperf_sampler_spec spec;
	struct spanperf_sampler *s;
	char online[64] = "";
	uint64_t v = 0;
	FILE *f;
	int before;

	f = fopen("/sys/devices/system/cpu/online", "r");
	if (!f || !fgets(online, sizeof(online), f) || strcmp(online, "0\n"))
		return fail("the guest was to have CPU 0 alone online");
	fclose(f);
	if (spanperf_sampler_spec_event("cpu-clock", 1000000, 0, &spec))
		return fail(spanperf_strerror());

	spec.cpus = both;
	spec.nr_cpus = 2;
	s = spanperf_sampler_open(&spec, -1, 0);
	if (!s)
		return fail(spanperf_strerror());
	if (spanperf_sampler_count(s) != 1 || spanperf_sampler_cpu(s, 0) != 0) {
		spanperf_sampler_close(s);
		return fail("CPUs 0 and 1 asked for: CPU 1 (offline) was not the one skipped");
	}
	for (unsigned long i = 0; i < 20000000; i++)
		sink += i;
	if (read(spanperf_sampler_fd(s, 0), &v, sizeof(v)) != sizeof(v) || !v) {
		spanperf_sampler_close(s);
		return fail("CPU 0's event counted nothing of a spin on it");
	}
	spanperf_sampler_close(s);

	spec.cpus = NULL;
	spec.nr_cpus = 0;
	s = spanperf_sampler_open(&spec, -1, 0);
	if (!s || spanperf_sampler_count(s) != 1 || spanperf_sampler_cpu(s, 0) != 0) {
		spanperf_sampler_close(s);
		return fail("the CPUs online (none given): not CPU 0 alone");
	}
	spanperf_sampler_close(s);

	before = fds();
	spec.cpus = second;
	spec.nr_cpus = 1;
	errno = 0;
	s = spanperf_sampler_open(&spec, -1, 0);
	if (s) {
		spanperf_sampler_close(s);
		return fail("CPU 1 alone (offline) was opened");
	}
	if (!strstr(spanperf_strerror(), "offline") || fds() != before)
		return fail("CPU 1 alone: no -ENODEV sentence naming it offline, or a descriptor left");
	printf("CPU 1 offline skipped (CPU 0's event counted %llu ns of our spin); CPU 1 alone: %s\n",
	       (unsigned long long)v, spanperf_strerror());
	return 0;
}
