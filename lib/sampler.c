// SPDX-License-Identifier: GPL-2.0
/*
 * libspanperf samplers: one sampling event per CPU with the caller's BPF
 * program attached to each (PERF_EVENT_IOC_SET_BPF: no libbpf in the
 * application's process), the way `record` opens its own: disabled until the
 * program is on, offline CPUs skipped, everything closed on a failure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "events.h"
#include "fileio.h"
#include "lib_internal.h"
#include "parse.h"
#include "perf_open.h"

struct spanperf_sampler {
	int nr;
	bool enabled;
	int *cpus;
	int *fds;
};

static void spec_from_event(const struct event_spec *ev, uint64_t period, int freq,
			    struct spanperf_sampler_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	snprintf(spec->name, sizeof(spec->name), "%s", ev->name);
	spec->type = ev->attr.type;
	spec->config = ev->attr.config;
	spec->config1 = ev->attr.config1;
	spec->config2 = ev->attr.config2;
	spec->sample_period = period;
	spec->freq = !!freq;
	spec->exclude_user = ev->attr.exclude_user;
	spec->exclude_kernel = ev->attr.exclude_kernel;
}

int spanperf_sampler_spec_event(const char *event, uint64_t period, int freq, struct spanperf_sampler_spec *spec)
{
	struct event_spec ev;
	char err[256] = "";
	int r;

	if (!event || !spec)
		return sp_fail(-EINVAL, "spanperf_sampler_spec_event was given a NULL %s", spec ? "event" : "spec");
	if (!period)
		return sp_fail(-EINVAL, "event '%.60s' needs a sampling period or frequency above 0", event);
	r = event_parse(event, &ev, err, sizeof(err));
	if (r)
		return sp_fail(r, "%s", err[0] ? err : "event cannot be parsed");
	if (ev.kind == EV_SCHED)
		return sp_fail(-EINVAL, "event '%.60s' is counted by spanperf's own programs and cannot be sampled",
			       event);
	spec_from_event(&ev, period, freq, spec);
	return 0;
}

int spanperf_sampler_spec_attr(const struct spanperf_sampler_spec *spec, struct perf_event_attr *a)
{
	if (!spec || !a)
		return sp_fail(-EINVAL, "spanperf_sampler_spec_attr was given a NULL %s", spec ? "attr" : "spec");
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = spec->type;
	a->config = spec->config;
	a->config1 = spec->config1;
	a->config2 = spec->config2;
	a->exclude_user = spec->exclude_user;
	a->exclude_kernel = spec->exclude_kernel;
	/* record's sample layout and clock, so that a file written from these events reads as record's do. */
	event_sampling_attr(a, spec->freq, spec->sample_period);
	return 0;
}

/* Whether err means the PMU is missing or hidden, as record decides its fallback. */
static int try_cycles(struct perf_event_attr *a, int cpu)
{
	int fd = sys_perf_event_open(a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	/* Unprivileged, a CPU-wide open is refused whatever the PMU: try the thread. */
	if (fd < 0 && (errno == EACCES || errno == EPERM))
		fd = sys_perf_event_open(a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int first_online_cpu(void)
{
	struct int_list cpus = { 0 };
	char buf[4096];
	int cpu = 0;

	if (!read_file_str("/sys/devices/system/cpu/online", buf, sizeof(buf)) &&
	    !int_list_parse(&cpus, buf, true, 1 << 16) && cpus.n)
		cpu = cpus.v[0];
	int_list_free(&cpus);
	return cpu;
}

int spanperf_probe_cycles(unsigned hz, struct spanperf_sampler_spec *spec)
{
	struct event_spec ev;
	struct perf_event_attr a;
	int r;

	if (!spec || !hz)
		return sp_fail(-EINVAL, "spanperf_probe_cycles needs a spec and a frequency above 0 Hz");
	event_default_cycles(&ev);
	spec_from_event(&ev, hz, 1, spec);
	spanperf_sampler_spec_attr(spec, &a);
	r = try_cycles(&a, first_online_cpu());
	if (!r)
		return 0;
	if (!event_errno_means_no_pmu(r))
		return sp_fail(r, "hardware cycles cannot be opened, and not for want of a PMU: perf_event_open: %s",
			       strerror(-r));
	sp_fail(r, "hardware cycles are not available here (perf_event_open: %s%s); sampling cpu-clock instead",
		strerror(-r),
		access("/sys/bus/event_source/devices/cpu", F_OK) ? "; no hardware PMU, as in most VMs" : "");
	event_cpu_clock(&ev);
	spec_from_event(&ev, hz, 1, spec);
	return 1;
}

void spanperf_sampler_close(struct spanperf_sampler *s)
{
	if (!s)
		return;
	/* Disabled first: no sample runs the program while the others close. */
	for (int i = 0; i < s->nr; i++)
		ioctl(s->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	for (int i = 0; i < s->nr; i++)
		close(s->fds[i]);
	free(s->cpus);
	free(s->fds);
	free(s);
}

static int sampler_ioctl(struct spanperf_sampler *s, unsigned long req, const char *what)
{
	if (!s)
		return sp_fail(-EINVAL, "spanperf_sampler_%s was given a NULL sampler", what);
	for (int i = 0; i < s->nr; i++)
		if (ioctl(s->fds[i], req, 0))
			return sp_fail(-errno, "the sampler's event on CPU %d cannot be %sd: %s", s->cpus[i], what,
				       strerror(errno));
	s->enabled = req == PERF_EVENT_IOC_ENABLE;
	return 0;
}

int spanperf_sampler_enable(struct spanperf_sampler *s)
{
	return sampler_ioctl(s, PERF_EVENT_IOC_ENABLE, "enable");
}

int spanperf_sampler_disable(struct spanperf_sampler *s)
{
	return sampler_ioctl(s, PERF_EVENT_IOC_DISABLE, "disable");
}

int spanperf_sampler_count(const struct spanperf_sampler *s)
{
	return s ? s->nr : 0;
}

int spanperf_sampler_cpu(const struct spanperf_sampler *s, int i)
{
	return s && i >= 0 && i < s->nr ? s->cpus[i] : -1;
}

int spanperf_sampler_fd(const struct spanperf_sampler *s, int i)
{
	return s && i >= 0 && i < s->nr ? s->fds[i] : -1;
}

static int open_error(const struct spanperf_sampler_spec *spec, int cpu, int err)
{
	if (err == EACCES || err == EPERM) {
		char buf[16] = "";

		read_file_str("/proc/sys/kernel/perf_event_paranoid", buf, sizeof(buf));
		return sp_fail(-err,
			       "event '%s' cannot sample CPU %d: a CPU-wide event needs CAP_PERFMON (or perf_event_paranoid <= 0; it is %.8s)",
			       spec->name, cpu, buf[0] ? buf : "?");
	}
	if (err == EMFILE || err == ENFILE)
		return sp_fail(-err, "event '%s' cannot be opened on CPU %d: out of file descriptors (%s)", spec->name,
			       cpu, strerror(err));
	return sp_fail(-err, "event '%s' cannot be opened on CPU %d: perf_event_open: %s", spec->name, cpu,
		       strerror(err));
}

struct spanperf_sampler *spanperf_sampler_open(const struct spanperf_sampler_spec *spec, int bpf_prog_fd,
					       unsigned flags)
{
	struct int_list online = { 0 };
	struct spanperf_sampler *s = NULL;
	struct perf_event_attr a;
	const int *cpus;
	char buf[4096];
	int nr, r;

	if (!spec) {
		sp_fail(-EINVAL, "spanperf_sampler_open was given a NULL spec");
		return NULL;
	}
	if (flags & ~SPANPERF_DEFERRED_ENABLE) {
		sp_fail(-EINVAL, "flags 0x%x have bits spanperf_sampler_open does not know", flags);
		return NULL;
	}
	if (!spec->sample_period) {
		sp_fail(-EINVAL, "event '%s' needs a sampling period or frequency above 0", spec->name);
		return NULL;
	}
	cpus = spec->cpus;
	nr = spec->nr_cpus;
	if (!cpus) {
		r = read_file_str("/sys/devices/system/cpu/online", buf, sizeof(buf));
		if (!r)
			r = int_list_parse(&online, buf, true, 1 << 16);
		if (r) {
			sp_fail(r, "the online CPUs cannot be read from /sys/devices/system/cpu/online: %s", strerror(-r));
			return NULL;
		}
		cpus = online.v;
		nr = online.n;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->cpus = calloc(nr ? nr : 1, sizeof(int))) || !(s->fds = calloc(nr ? nr : 1, sizeof(int)))) {
		sp_fail(-ENOMEM, "out of memory opening a sampler of '%s'", spec->name);
		goto fail;
	}
	spanperf_sampler_spec_attr(spec, &a);
	for (int i = 0; i < nr; i++) {
		int fd = sys_perf_event_open(&a, -1, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			/* Offline now, whatever the list said: it stays offline or comes back, neither is an error. */
			if (errno == ESRCH || errno == ENODEV)
				continue;
			open_error(spec, cpus[i], errno);
			goto fail;
		}
		s->cpus[s->nr] = cpus[i];
		s->fds[s->nr++] = fd;
		/*
		 * A tracepoint's program hangs on the tracepoint, not on the event:
		 * once is every CPU's (a second attach is EEXIST).
		 */
		if (bpf_prog_fd >= 0 && (a.type != PERF_TYPE_TRACEPOINT || s->nr == 1) &&
		    ioctl(fd, PERF_EVENT_IOC_SET_BPF, bpf_prog_fd)) {
			sp_fail(-errno, "BPF program fd %d cannot be attached to event '%s' on CPU %d: %s", bpf_prog_fd,
				spec->name, cpus[i], strerror(errno));
			goto fail;
		}
	}
	if (!s->nr) {
		sp_fail(-ENODEV, "event '%s' was opened on no CPU: every CPU asked for is offline", spec->name);
		goto fail;
	}
	/* Enabled only now that every program is on: no sample ever runs without it. */
	if (!(flags & SPANPERF_DEFERRED_ENABLE) && spanperf_sampler_enable(s))
		goto fail;
	int_list_free(&online);
	return s;
fail:
	r = errno;
	spanperf_sampler_close(s);
	int_list_free(&online);
	errno = r;
	return NULL;
}
