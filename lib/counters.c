// SPDX-License-Identifier: GPL-2.0
/*
 * libspanperf counters: one perf group per handle, on the calling thread,
 * read in one go: from the mmap pages where the kernel allows it, else one
 * read(2) of the group.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "events.h"
#include "lib_internal.h"
#include "page.h"
#include "perf_open.h"

/* The thread's last failure, for spanperf_strerror(). */
static __thread char last_err[320];
/* Its address names the thread: cheaper than gettid() on every read. */
static __thread char thread_anchor;
/* Bumped in a forked child: handles made before the fork count the parent's thread. */
unsigned sp_fork_gen;

int sp_fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_err, sizeof(last_err), fmt, ap);
	va_end(ap);
	errno = code < 0 ? -code : code;
	return code;
}

const char *spanperf_strerror(void)
{
	return last_err;
}

static void on_fork_child(void)
{
	__atomic_add_fetch(&sp_fork_gen, 1, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void sp_init(void)
{
	pthread_atfork(NULL, NULL, on_fork_child);
}

enum sp_path { PATH_READ, PATH_RDPMC, PATH_MMAP, PATH_RUSAGE, PATH_NONE };
static const char *const path_names[] = { "read", "rdpmc", "mmap", "rusage", "none" };

struct sp_event {
	char name[EV_NAME_LEN];
	const char *unit;
	int fd; /* -1: counted by getrusage, or not at all (missing) */
	enum sp_path path;
	bool clock, hw;
	bool missing; /* SPANPERF_SKIP_UNCOUNTABLE left it out: why says why, reads give 0 */
	char *why;
	struct perf_event_mmap_page *page;
};

struct spanperf_counters {
	int n, nr_group; /* events; those in the perf group, in order */
	int leader;	 /* fd */
	bool inherit, fast, rusage;
	bool target;	/* another pid or a CPU: never the owner's no-syscall paths */
	bool disabled;	/* by spanperf_counters_disable: getrusage's count is frozen too */
	unsigned gen;
	const char *owner;
	uint64_t rusage_base, rusage_frozen;
	size_t page_size;
	uint64_t *buf; /* the group read: nr, time_enabled, time_running, values */
	struct sp_event ev[];
};

#if defined(__x86_64__) || defined(__i386__)
static inline uint64_t sp_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static inline uint64_t sp_rdpmc(uint32_t counter)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdpmc" : "=a"(lo), "=d"(hi) : "c"(counter));
	return (uint64_t)hi << 32 | lo;
}
#define SP_HAVE_USER_READS 1
#else
static inline uint64_t sp_rdtsc(void)
{
	return 0;
}
static inline uint64_t sp_rdpmc(uint32_t counter)
{
	(void)counter;
	return 0;
}
#define SP_HAVE_USER_READS 0
#endif

static uint64_t rusage_switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return 0;
	return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

static int paranoid_level(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int v = 2;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 2;
		fclose(f);
	}
	return v;
}

/* Happen only in kernel mode: user-only, they would always read 0. */
static bool kernel_only(const struct perf_event_attr *a)
{
	return (a->type == PERF_TYPE_SOFTWARE && (a->config == PERF_COUNT_SW_CONTEXT_SWITCHES ||
						  a->config == PERF_COUNT_SW_CPU_MIGRATIONS)) ||
	       a->type == PERF_TYPE_TRACEPOINT;
}

static bool is_hw(const struct perf_event_attr *a)
{
	return a->type != PERF_TYPE_SOFTWARE && a->type != PERF_TYPE_TRACEPOINT;
}

/* One sentence on why ev could not be opened. */
static int open_error(const struct event_spec *ev, const struct perf_event_attr *a, int err)
{
	if ((err == EACCES || err == EPERM) && !a->exclude_kernel)
		return sp_fail(-err,
			       "event '%s' counts kernel mode, which perf_event_paranoid %d refuses to a process without CAP_PERFMON%s",
			       ev->name, paranoid_level(),
			       kernel_only(a) ? " (it happens only in the kernel)" : "; drop SPANPERF_KERNEL or :k");
	if (is_hw(a) && event_errno_means_no_pmu(err)) {
		if (a->type == PERF_TYPE_HARDWARE || a->type == PERF_TYPE_HW_CACHE || a->type == PERF_TYPE_RAW) {
			if (access("/sys/bus/event_source/devices/cpu", F_OK))
				return sp_fail(-err,
					       "event '%s' cannot be counted here: this machine has no hardware PMU (no /sys/bus/event_source/devices/cpu, as in most VMs; perf_event_open: %s)",
					       ev->name, strerror(err));
			return sp_fail(-err, "event '%s' cannot be counted here: the CPU's PMU refuses it (perf_event_open: %s)",
				       ev->name, strerror(err));
		}
		return sp_fail(-err, "event '%s' cannot be counted by its PMU on this thread (perf_event_open: %s)",
			       ev->name, strerror(err));
	}
	if (err == EMFILE || err == ENFILE)
		return sp_fail(-err, "event '%s' cannot be opened: out of file descriptors (%s)", ev->name,
			       strerror(err));
	return sp_fail(-err, "event '%s' cannot be opened on this thread: perf_event_open: %s", ev->name,
		       strerror(err));
}

static uint64_t scale(uint64_t v, uint64_t enabled, uint64_t running)
{
	if (running >= enabled || !running)
		return v;
	return (uint64_t)((unsigned __int128)v * enabled / running);
}

/*
 * Where the kernel offers user-space reads, every event of the group must:
 * one syscall serves them all anyway.
 */
static void choose_paths(struct spanperf_counters *c)
{
	bool fast = SP_HAVE_USER_READS && !c->inherit && !c->rusage && !c->target &&
		    !getenv("SPANPERF_NO_USER_READS");

	for (int i = 0; i < c->n && fast; i++) {
		const struct perf_event_mmap_page *pc = c->ev[i].page;

		if (c->ev[i].missing)
			continue;
		if (!pc)
			fast = false;
		else if (c->ev[i].clock)
			fast = pc->cap_user_time;
		else if (c->ev[i].hw)
			/* The time fields scale a multiplexed count: both are needed. */
			fast = pc->cap_user_rdpmc && pc->cap_user_time;
		else
			fast = false; /* page-faults and the like have no live count in the page */
	}
	c->fast = fast;
	for (int i = 0; i < c->n; i++)
		c->ev[i].path = c->ev[i].missing ? PATH_NONE
				: c->ev[i].fd < 0 ? PATH_RUSAGE
				: !fast		? PATH_READ
				: c->ev[i].clock ? PATH_MMAP
						 : PATH_RDPMC;
}

void spanperf_counters_close(struct spanperf_counters *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n; i++) {
		if (c->ev[i].page)
			munmap(c->ev[i].page, c->page_size);
		if (c->ev[i].fd >= 0)
			close(c->ev[i].fd);
		free(c->ev[i].why);
	}
	free(c->buf);
	free(c);
}

/* Whether open's errno is this event being uncountable here, not the process running out of something. */
static bool uncountable(int err)
{
	return err != EMFILE && err != ENFILE && err != ENOMEM && err != ESRCH && err != EINTR;
}

/* The sentence for a refused open of another pid or a CPU: perf's permission rules. */
static int target_error(const struct event_spec *ev, int pid, int cpu, int err)
{
	if (err == ESRCH)
		return sp_fail(-err, "event '%s' cannot count pid %d: no such process or thread", ev->name, pid);
	if ((err == EACCES || err == EPERM) && cpu >= 0 && pid < 0)
		return sp_fail(-err,
			       "event '%s' cannot count all of CPU %d: perf_event_paranoid %d allows that only to a process with CAP_PERFMON (or at paranoid <= 0)",
			       ev->name, cpu, paranoid_level());
	if (err == EACCES || err == EPERM)
		return sp_fail(-err,
			       "event '%s' cannot count pid %d: perf allows another process only to a caller that may ptrace it (same user, or CAP_PERFMON/CAP_SYS_PTRACE; perf_event_paranoid %d)",
			       ev->name, pid, paranoid_level());
	if (err == ENODEV || err == EINVAL)
		if (cpu >= 0)
			return sp_fail(-err, "event '%s' cannot count CPU %d: it is offline or does not exist (%s)",
				       ev->name, cpu, strerror(err));
	return 0;
}

static struct spanperf_counters *counters_open(const char *events, unsigned flags, int pid, int cpu)
{
	struct spanperf_counters *c = NULL;
	struct event_spec *evs = NULL;
	bool target = pid != 0 || cpu >= 0, skip = flags & SPANPERF_SKIP_UNCOUNTABLE;
	char err[256] = "";
	int n = 0, r, counted = 0;

	if (flags & ~(SPANPERF_KERNEL | SPANPERF_INHERIT | SPANPERF_SKIP_UNCOUNTABLE)) {
		sp_fail(-EINVAL, "flags 0x%x have bits spanperf_counters_open does not know", flags);
		return NULL;
	}
	if (pid < -1 || cpu < -1 || (pid == -1 && cpu == -1)) {
		sp_fail(-EINVAL, "pid %d with cpu %d is no target perf counts (pid -1 needs a CPU)", pid, cpu);
		return NULL;
	}
	r = event_list_parse(events, &evs, &n, err, sizeof(err));
	if (r) {
		sp_fail(r, "%s", err[0] ? err : "event list cannot be parsed");
		return NULL;
	}
	if (n > SPANPERF_MAX_COUNTERS) {
		sp_fail(-E2BIG, "event list '%.60s' has %d events; a handle counts at most %d", events, n,
			SPANPERF_MAX_COUNTERS);
		goto cleanup;
	}
	c = calloc(1, sizeof(*c) + n * sizeof(c->ev[0]));
	if (!c) {
		sp_fail(-ENOMEM, "out of memory opening '%.60s'", events);
		goto cleanup;
	}
	c->n = n;
	c->leader = -1;
	c->inherit = flags & SPANPERF_INHERIT;
	c->target = target;
	c->gen = __atomic_load_n(&sp_fork_gen, __ATOMIC_RELAXED);
	c->owner = target ? NULL : &thread_anchor;
	c->page_size = (size_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < n; i++)
		c->ev[i].fd = -1;

	for (int i = 0; i < n; i++) {
		struct sp_event *e = &c->ev[i];
		struct perf_event_attr a = evs[i].attr;
		bool mods = a.exclude_user || a.exclude_kernel || a.exclude_hv;
		int fd;

		snprintf(e->name, sizeof(e->name), "%s", evs[i].name);
		e->unit = evs[i].unit ? evs[i].unit : "";
		e->hw = is_hw(&a);
		e->clock = a.type == PERF_TYPE_SOFTWARE &&
			   (a.config == PERF_COUNT_SW_TASK_CLOCK || a.config == PERF_COUNT_SW_CPU_CLOCK);
		a.size = sizeof(a);
		/* The whole group starts at once, when the leader is enabled below. */
		a.disabled = c->leader < 0;
		a.inherit = c->inherit;
		/*
		 * Group reads of inherited events left the children out on older
		 * kernels; one read per event sums them on all.
		 */
		a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
				(c->inherit ? 0 : PERF_FORMAT_GROUP);
		if (!mods) {
			a.exclude_kernel = kernel_only(&a) ? 0 : !(flags & SPANPERF_KERNEL);
			a.exclude_hv = a.exclude_kernel;
		}
		fd = sys_perf_event_open(&a, pid, cpu, c->leader, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			int e_no = errno;

			/*
			 * context-switches refused kernel-side (paranoid 2): the
			 * thread's own switch counts are the same switches.
			 */
			if ((e_no == EACCES || e_no == EPERM) && a.type == PERF_TYPE_SOFTWARE &&
			    a.config == PERF_COUNT_SW_CONTEXT_SWITCHES && !mods && !c->inherit && !target) {
				c->rusage = true;
				counted++;
				continue;
			}
			if ((e_no == EACCES || e_no == EPERM) && c->inherit && kernel_only(&a) &&
			    a.config == PERF_COUNT_SW_CONTEXT_SWITCHES && !target) {
				sp_fail(-e_no,
					"event '%s' with SPANPERF_INHERIT needs kernel-mode counting, which perf_event_paranoid %d refuses without CAP_PERFMON (without INHERIT it is read from getrusage)",
					e->name, paranoid_level());
			} else if (!target || !target_error(&evs[i], pid, cpu, e_no)) {
				open_error(&evs[i], &a, e_no);
			}
			/* A target that is gone or refused is refused for every event: no skipping that. */
			if (skip && uncountable(e_no) && !(target && (e_no == EACCES || e_no == EPERM))) {
				e->missing = true;
				e->why = strdup(spanperf_strerror());
				if (!e->why) {
					sp_fail(-ENOMEM, "out of memory opening '%.60s'", events);
					goto fail;
				}
				continue;
			}
			goto fail;
		}
		e->fd = fd;
		counted++;
		if (c->leader < 0)
			c->leader = fd;
		c->nr_group++;
		/* One page, no ring: the self-monitoring fields only. */
		if (SP_HAVE_USER_READS && !c->inherit && !target) {
			void *p = mmap(NULL, c->page_size, PROT_READ, MAP_SHARED, fd, 0);

			e->page = p == MAP_FAILED ? NULL : p;
		}
	}
	c->buf = calloc(3 + (c->nr_group ? c->nr_group : 1), sizeof(uint64_t));
	if (!c->buf) {
		sp_fail(-ENOMEM, "out of memory opening '%.60s'", events);
		goto fail;
	}
	if (c->rusage)
		c->rusage_base = rusage_switches();
	if (c->leader >= 0 && ioctl(c->leader, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP)) {
		sp_fail(-errno, "events '%.60s' cannot be enabled: %s", events, strerror(errno));
		goto fail;
	}
	choose_paths(c);
	(void)counted;
	free(evs);
	return c;
fail:
	r = errno;
	spanperf_counters_close(c);
	c = NULL;
	errno = r;
cleanup:
	free(evs);
	return c;
}

struct spanperf_counters *spanperf_counters_open(const char *events, unsigned flags)
{
	return counters_open(events, flags, 0, -1);
}

struct spanperf_counters *spanperf_counters_open_target(const char *events, unsigned flags, int pid, int cpu)
{
	return counters_open(events, flags, pid, cpu);
}

static void put(uint64_t *values, struct spanperf_value *out, int i, uint64_t v, uint64_t enabled,
		uint64_t running)
{
	values[i] = scale(v, enabled, running);
	if (out) {
		out[i].value = values[i];
		out[i].raw = v;
		out[i].time_enabled = enabled;
		out[i].time_running = running;
	}
}

static int read_fast(struct spanperf_counters *c, uint64_t *values, struct spanperf_value *out)
{
	for (int i = 0; i < c->n; i++) {
		struct sp_event *e = &c->ev[i];
		struct page_snap s;

		if (e->missing)
			continue;
		page_read(e->page, !e->clock, sp_rdtsc, sp_rdpmc, &s);
		if (e->clock) {
			/* A task's clock runs exactly while it is enabled on this thread. */
			put(values, out, i, s.enabled, s.enabled, s.enabled);
			continue;
		}
		if (!s.index)
			return -EAGAIN; /* off the PMU right now: the kernel has the count */
		if (!s.running && s.enabled)
			return sp_fail(-ENODATA, "event '%s' has not run since the handle was opened", e->name);
		put(values, out, i, s.count, s.enabled, s.running);
	}
	return 0;
}

static int read_each(struct spanperf_counters *c, uint64_t *values, struct spanperf_value *out)
{
	for (int i = 0; i < c->n; i++) {
		uint64_t v[3];

		if (c->ev[i].fd < 0)
			continue;
		if (read(c->ev[i].fd, v, sizeof(v)) != (ssize_t)sizeof(v))
			return sp_fail(-(errno ? errno : EIO), "event '%s' cannot be read: %s", c->ev[i].name,
				       strerror(errno ? errno : EIO));
		if (!v[2] && v[1])
			return sp_fail(-ENODATA,
				       "event '%s' has not been on the PMU since the handle was opened (multiplexed out)",
				       c->ev[i].name);
		put(values, out, i, v[0], v[1], v[2]);
	}
	return 0;
}

static int read_group(struct spanperf_counters *c, uint64_t *values, struct spanperf_value *out)
{
	size_t want = (3 + (size_t)c->nr_group) * sizeof(uint64_t);
	ssize_t got = read(c->leader, c->buf, want);
	uint64_t enabled, running;
	int k = 0;

	if (got != (ssize_t)want)
		return sp_fail(got < 0 ? -errno : -EIO, "events of '%s' cannot be read: %s", c->ev[0].name,
			       got < 0 ? strerror(errno) : "short read");
	enabled = c->buf[1];
	running = c->buf[2];
	/* A disabled group that never ran reads 0, not an error: it was told not to run. */
	if (!running && enabled)
		return sp_fail(-ENODATA,
			       "events of '%s' have not been on the PMU since the handle was opened (multiplexed out)",
			       c->ev[0].name);
	for (int i = 0; i < c->n; i++)
		if (c->ev[i].fd >= 0)
			put(values, out, i, c->buf[3 + k++], enabled, running);
	return 0;
}

static int counters_read(struct spanperf_counters *c, uint64_t *values, struct spanperf_value *out)
{
	bool own;
	int r;

	if (!c || !values)
		return sp_fail(-EINVAL, "spanperf_counters_read was given a NULL %s", c ? "values array" : "handle");
	if (c->gen != __atomic_load_n(&sp_fork_gen, __ATOMIC_RELAXED))
		return sp_fail(-ECHILD,
			       "this handle was opened before fork() and counts the parent's thread; open one in the child");
	own = c->owner == &thread_anchor;
	for (int i = 0; i < c->n; i++)
		if (c->ev[i].missing)
			put(values, out, i, 0, 0, 0);
	if (c->fast && own && !c->disabled) {
		r = read_fast(c, values, out);
		if (r != -EAGAIN)
			return r;
	}
	if (c->rusage) {
		if (!own)
			return sp_fail(-EINVAL,
				       "context-switches is read from getrusage(RUSAGE_THREAD) here, so only the thread that opened the handle can read it");
		uint64_t sw = c->disabled ? c->rusage_frozen : rusage_switches() - c->rusage_base;

		for (int i = 0; i < c->n; i++)
			if (c->ev[i].fd < 0 && !c->ev[i].missing)
				put(values, out, i, sw, 0, 0);
	}
	if (!c->nr_group)
		return 0;
	return c->inherit ? read_each(c, values, out) : read_group(c, values, out);
}

int spanperf_counters_read(struct spanperf_counters *c, uint64_t *values)
{
	return counters_read(c, values, NULL);
}

int spanperf_counters_read_values(struct spanperf_counters *c, struct spanperf_value *out)
{
	uint64_t values[SPANPERF_MAX_COUNTERS];

	if (!out)
		return sp_fail(-EINVAL, "spanperf_counters_read_values was given a NULL array");
	return counters_read(c, values, out);
}

/* One ioctl on the group (or each event, inherited) for enable, disable and reset. */
static int group_ioctl(struct spanperf_counters *c, unsigned long req, const char *what)
{
	if (!c)
		return sp_fail(-EINVAL, "spanperf_counters_%s was given a NULL handle", what);
	if (c->gen != __atomic_load_n(&sp_fork_gen, __ATOMIC_RELAXED))
		return sp_fail(-ECHILD, "this handle was opened before fork() and counts the parent's thread");
	for (int i = 0; i < c->n; i++) {
		int fd = c->ev[i].fd;

		if (fd < 0 || (!c->inherit && fd != c->leader))
			continue;
		if (ioctl(fd, req, c->inherit ? 0 : PERF_IOC_FLAG_GROUP))
			return sp_fail(-errno, "events of '%s' cannot be %s: %s", c->ev[i].name,
				       req == PERF_EVENT_IOC_RESET ? "reset" : what, strerror(errno));
	}
	return 0;
}

int spanperf_counters_enable(struct spanperf_counters *c)
{
	int r = group_ioctl(c, PERF_EVENT_IOC_ENABLE, "enabled");

	if (!r && c->disabled) {
		/* getrusage cannot stop: the switches while disabled are taken out of the base. */
		if (c->rusage)
			c->rusage_base = rusage_switches() - c->rusage_frozen;
		c->disabled = false;
	}
	return r;
}

int spanperf_counters_disable(struct spanperf_counters *c)
{
	int r = group_ioctl(c, PERF_EVENT_IOC_DISABLE, "disabled");

	if (!r && !c->disabled) {
		if (c->rusage)
			c->rusage_frozen = rusage_switches() - c->rusage_base;
		c->disabled = true;
	}
	return r;
}

int spanperf_counters_reset(struct spanperf_counters *c)
{
	int r = group_ioctl(c, PERF_EVENT_IOC_RESET, "reset");

	/* The page's clocks are time_enabled, which a reset leaves: read(2) from now on. */
	if (!r)
		c->fast = false;
	if (!r && c->rusage) {
		c->rusage_base = rusage_switches();
		c->rusage_frozen = 0;
	}
	return r;
}

int spanperf_counters_counted(const struct spanperf_counters *c, int i)
{
	return c && i >= 0 && i < c->n ? !c->ev[i].missing : -1;
}

const char *spanperf_counters_why(const struct spanperf_counters *c, int i)
{
	if (!c || i < 0 || i >= c->n)
		return NULL;
	return c->ev[i].missing ? c->ev[i].why : "";
}

int spanperf_counters_count(const struct spanperf_counters *c)
{
	return c ? c->n : 0;
}

const char *spanperf_counters_name(const struct spanperf_counters *c, int i)
{
	return c && i >= 0 && i < c->n ? c->ev[i].name : NULL;
}

const char *spanperf_counters_path(const struct spanperf_counters *c, int i)
{
	return c && i >= 0 && i < c->n ? path_names[c->ev[i].path] : NULL;
}

const char *spanperf_counters_unit(const struct spanperf_counters *c, int i)
{
	return c && i >= 0 && i < c->n ? c->ev[i].unit : NULL;
}

int spanperf_measure(const char *events, void (*fn)(void *), void *arg, uint64_t *values)
{
	uint64_t before[SPANPERF_MAX_COUNTERS];
	struct spanperf_counters *c;
	int r;

	if (!fn || !values)
		return sp_fail(-EINVAL, "spanperf_measure was given a NULL %s", fn ? "values array" : "function");
	c = spanperf_counters_open(events, 0);
	if (!c)
		return -errno;
	r = spanperf_counters_read(c, before);
	if (!r) {
		fn(arg);
		r = spanperf_counters_read(c, values);
	}
	if (!r)
		for (int i = 0; i < c->n; i++)
			values[i] -= before[i];
	spanperf_counters_close(c);
	return r;
}
