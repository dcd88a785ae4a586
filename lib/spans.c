// SPDX-License-Identifier: GPL-2.0
/*
 * libspanperf spans: each one is published as the thread's OTEP 4947
 * context while it runs (what `spanperf record --otel` reads from the
 * sampling interrupt), measured with the thread's counters, and written as an
 * OTLP JSON line when it ends.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/syscall.h>

/* The library owns the variable readers find in .dynsym (libspanperf.so exports it). */
#define OTEL_THREAD_CTX_DEFINE
#include "otel_thread_ctx.h"
#include "otel_process_ctx.h"

#include "lib_internal.h"
#include "names.h"
#include "sbuf.h"

#define MAX_DEPTH 64
#define DEFAULT_EVENTS "task-clock,context-switches,page-faults"
/* key_index of OTEL_SPAN_NAME_KEY in the key map this library publishes (OTEP 4719). */
#define NAME_KEY 0
/* key_index of "span.parent_id": the enclosing span's id in hex, so a recording sees the nesting. */
#define PARENT_KEY 1
/*
 * key_index of "spanperf.counters": the span's counter deltas, written into
 * its record just before it gives the context up ("task-clock=1234,
 * context-switches=2", values of at most 255 bytes, as many as it takes).  A
 * recorder reads that final state where it sees the context end, so the
 * library's counts of the span reach the recording.
 */
#define COUNTERS_KEY 2

struct frame {
	/*
	 * What readers see while the span runs: the two in turn, so that the
	 * final state of a span stays readable while the next one at its
	 * depth runs (a recorder reads it at its next look at the thread).
	 */
	struct otel_thread_ctx_record recs[2];
	struct otel_thread_ctx_record *rec; /* the span's, one of recs */
	struct otel_thread_ctx_record *prev;
	char name[SPANPERF_NAME_MAX];
	uint8_t parent[8];
	uint64_t start_ns;
	uint64_t seq; /* the thread's count of span begins at this one's: a deeper frame's higher one is its child */
	unsigned gen; /* fork generation of start[]: a child's span cannot use its parent's counts */
	struct spanperf_counters *ctr; /* the thread's handle for this span's events */
	int nctr;
	uint64_t start[SPANPERF_MAX_COUNTERS];
};

/*
 * A thread's handles, one per event list its spans asked for: opening costs
 * a system call per event, a span only a read.  Eight lists per thread;
 * beyond that the least recently used one no open span holds is closed.
 */
#define MAX_SETS 8

struct ctr_set {
	char *events; /* NULL: the slot is free */
	struct spanperf_counters *ctr; /* NULL: opening failed, and said why once */
	uint64_t used;
};

struct thread_state {
	struct ctr_set sets[MAX_SETS];
	uint64_t clock; /* bumped at each lookup, for least recently used */
	unsigned gen; /* fork generation of the handles */
	uint64_t seq; /* spans begun */
	int depth;
	int tid;
	uint64_t rng;
	struct frame *frames[MAX_DEPTH]; /* allocated once each: a published record never moves */
	struct sbuf line;		 /* the export's line, reused */
};

static __thread struct thread_state *self;
static pthread_key_t self_key;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

/* Export: one fd shared by every thread; span ends write under the read side. */
static pthread_rwlock_t exp_lock = PTHREAD_RWLOCK_INITIALIZER;
static int exp_fd = -1;
static int64_t exp_realtime_off; /* CLOCK_REALTIME - CLOCK_MONOTONIC when the export began */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static pthread_mutex_t pctx_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t pctx_pid;	   /* process the context was published for (fork: publish again) */
static unsigned proc_gen = ~0u; /* fork generation of the cached pid and service name */
static pid_t proc_pid;
static char service[128];

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void thread_gone(void *p)
{
	struct thread_state *st = p;

	/* Nothing may point into frames about to be freed. */
	if (st->depth)
		otel_thread_ctx_swap(NULL);
	for (int i = 0; i < MAX_SETS; i++) {
		spanperf_counters_close(st->sets[i].ctr);
		free(st->sets[i].events);
	}
	for (int i = 0; i < MAX_DEPTH; i++)
		free(st->frames[i]);
	sbuf_free(&st->line);
	free(st);
	self = NULL;
}

static void make_key(void)
{
	pthread_key_create(&self_key, thread_gone);
}

static uint64_t next_rand(struct thread_state *st)
{
	/* splitmix64: ids need to be unique, not secret. */
	uint64_t z = (st->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rand_id(struct thread_state *st, uint8_t *id, size_t n)
{
	uint64_t r[2], any;

	/* All zero means "no id": draw again (once in 2^64). */
	do {
		r[0] = next_rand(st);
		r[1] = n > 8 ? next_rand(st) : 0;
		any = r[0] | r[1];
	} while (!any);
	memcpy(id, r, n);
}

static struct thread_state *get_self(void)
{
	struct thread_state *st = self;

	if (st)
		return st;
	pthread_once(&self_once, make_key);
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->tid = (int)syscall(SYS_gettid);
	if (getrandom(&st->rng, sizeof(st->rng), GRND_NONBLOCK) != sizeof(st->rng))
		st->rng = mono_ns() ^ ((uint64_t)st->tid << 32) ^ (uint64_t)(uintptr_t)st;
	if (pthread_setspecific(self_key, st)) {
		free(st);
		return NULL;
	}
	self = st;
	return st;
}

/* The pid and service.name of spans, again in a forked child. */
static void proc_info(void)
{
	unsigned gen = __atomic_load_n(&sp_fork_gen, __ATOMIC_RELAXED);
	const char *svc;

	if (__atomic_load_n(&proc_gen, __ATOMIC_ACQUIRE) == gen)
		return;
	pthread_mutex_lock(&pctx_lock);
	proc_pid = getpid();
	svc = getenv("OTEL_SERVICE_NAME");
	snprintf(service, sizeof(service), "%s", svc && *svc ? svc : program_invocation_short_name);
	__atomic_store_n(&proc_gen, gen, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&pctx_lock);
}

/*
 * The OTEP 4719 process context names key 0 of every record "span.name",
 * so that a recording shows the spans by name.  SPANPERF_PROCESS_CTX=0 leaves
 * it to an application that publishes its own.
 */
static bool pctx_off; /* SPANPERF_PROCESS_CTX=0, read once */

static void publish_process_ctx(void)
{
	static const char *const keys[] = { OTEL_SPAN_NAME_KEY, "span.parent_id", "spanperf.counters", NULL };
	const char *resource[] = { "service.name", service, NULL };

	/* Once per process: every span after the first pays one compare. */
	if (pctx_off || __atomic_load_n(&pctx_pid, __ATOMIC_ACQUIRE) == proc_pid)
		return;
	pthread_mutex_lock(&pctx_lock);
	if (pctx_pid != proc_pid) {
		/* Failure leaves the spans unnamed (attr.0), not missing: nothing to report. */
		if (!otel_process_ctx_publish(resource, keys))
			__atomic_store_n(&pctx_pid, proc_pid, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&pctx_lock);
}

static void read_env(void)
{
	const char *path = getenv("SPANPERF_SPANS"), *pctx = getenv("SPANPERF_PROCESS_CTX");

	pctx_off = pctx && !strcmp(pctx, "0");

	if (path && *path && exp_fd < 0 && spanperf_spans_export(path))
		/* Set from outside the program, so said where its owner looks. */
		fprintf(stderr, "libspanperf: %s\n", spanperf_strerror());
}

int spanperf_spans_export(const char *path)
{
	struct timespec rt, mo;
	int fd = -1, old;

	if (path) {
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd < 0)
			return sp_fail(-errno, "spans file '%s' cannot be opened for appending: %s", path,
				       strerror(errno));
	}
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mo);
	pthread_rwlock_wrlock(&exp_lock);
	old = exp_fd;
	exp_fd = fd;
	exp_realtime_off = ((int64_t)rt.tv_sec - mo.tv_sec) * 1000000000ll + (rt.tv_nsec - mo.tv_nsec);
	pthread_rwlock_unlock(&exp_lock);
	if (old >= 0)
		close(old);
	return 0;
}

static void drop_sets(struct thread_state *st)
{
	for (int i = 0; i < MAX_SETS; i++) {
		spanperf_counters_close(st->sets[i].ctr);
		free(st->sets[i].events);
		st->sets[i] = (struct ctr_set){ 0 };
	}
}

static bool set_in_use(const struct thread_state *st, const struct spanperf_counters *c)
{
	for (int d = 0; d < st->depth; d++)
		if (c && st->frames[d]->ctr == c)
			return true;
	return false;
}

/*
 * The thread's handle for events (NULL: SPANPERF_EVENTS, else the default),
 * opened at first use with SPANPERF_SKIP_UNCOUNTABLE so that one event the
 * machine cannot count never takes the others with it.
 */
static struct spanperf_counters *thread_counters(struct thread_state *st, const char *events)
{
	unsigned gen = __atomic_load_n(&sp_fork_gen, __ATOMIC_RELAXED);
	struct ctr_set *slot = NULL;

	if (st->gen != gen) {
		/* A forked child's copies count the parent's thread. */
		drop_sets(st);
		st->gen = gen;
	}
	if (!events || !*events) {
		const char *ev = getenv("SPANPERF_EVENTS");

		events = ev && *ev ? ev : DEFAULT_EVENTS;
	}
	st->clock++;
	for (int i = 0; i < MAX_SETS; i++) {
		struct ctr_set *e = &st->sets[i];

		if (e->events && !strcmp(e->events, events)) {
			e->used = st->clock;
			return e->ctr;
		}
		if (!e->events && !slot)
			slot = e;
	}
	if (!slot)
		for (int i = 0; i < MAX_SETS; i++) {
			struct ctr_set *e = &st->sets[i];

			if (!set_in_use(st, e->ctr) && (!slot || e->used < slot->used))
				slot = e;
		}
	if (!slot) {
		sp_fail(-EBUSY, "a span on this thread asks for a %dth event list while %d others are in open spans",
			MAX_SETS + 1, MAX_SETS);
		return NULL;
	}
	spanperf_counters_close(slot->ctr);
	free(slot->events);
	slot->events = strdup(events);
	slot->used = st->clock;
	slot->ctr = slot->events ? spanperf_counters_open(events, SPANPERF_SKIP_UNCOUNTABLE) : NULL;
	return slot->ctr;
}

static void hex(char *out, const uint8_t *p, size_t n);

static int span_begin(const char *name, const char *events, const uint8_t trace_id[16],
		      const uint8_t span_id[8], uint8_t trace_flags)
{
	struct otel_thread_ctx_record *cur = otel_thread_ctx_v1;
	struct thread_state *st;
	struct spanperf_counters *ctr;
	uint8_t trace[16], span[8];
	struct frame *f;
	size_t len;

	if (!name)
		return sp_fail(-EINVAL, "spanperf_span_begin was given a NULL name");
	st = get_self();
	if (!st)
		return sp_fail(-ENOMEM, "out of memory beginning span '%.60s'", name);
	if (st->depth >= MAX_DEPTH)
		return sp_fail(-E2BIG, "span '%.60s' would nest %d deep; spans nest at most %d deep", name,
			       st->depth + 1, MAX_DEPTH);
	f = st->frames[st->depth];
	if (!f) {
		f = st->frames[st->depth] = calloc(1, sizeof(*f));
		if (!f)
			return sp_fail(-ENOMEM, "out of memory beginning span '%.60s'", name);
	}
	pthread_once(&env_once, read_env);
	proc_info();
	publish_process_ctx();

	/* The enclosing span: ours, else a context the application published itself. */
	memset(f->parent, 0, sizeof(f->parent));
	if (st->depth) {
		const struct frame *up = st->frames[st->depth - 1];

		memcpy(trace, up->rec->trace_id, 16);
		memcpy(f->parent, up->rec->span_id, 8);
		if (!trace_id)
			trace_flags = up->rec->trace_flags;
	} else if (cur && cur->valid == 1) {
		memcpy(trace, cur->trace_id, 16);
		memcpy(f->parent, cur->span_id, 8);
		if (!trace_id)
			trace_flags = cur->trace_flags;
	} else {
		rand_id(st, trace, 16);
		if (!trace_id)
			trace_flags = 1; /* sampled: the span is being recorded */
	}
	if (trace_id)
		memcpy(trace, trace_id, 16);
	if (span_id)
		memcpy(span, span_id, 8);
	else
		rand_id(st, span, 8);

	len = strnlen(name, SPANPERF_NAME_MAX - 1);
	memcpy(f->name, name, len);
	f->name[len] = 0;
	f->rec = f->rec == &f->recs[0] ? &f->recs[1] : &f->recs[0];
	otel_thread_ctx_record_init(f->rec, trace, span, trace_flags);
	otel_thread_ctx_record_add_attr(f->rec, NAME_KEY, f->name, len);
	{
		static const uint8_t none[8];

		if (memcmp(f->parent, none, 8)) {
			char hx[17];

			hex(hx, f->parent, 8);
			otel_thread_ctx_record_add_attr(f->rec, PARENT_KEY, hx, 16);
		}
	}

	ctr = thread_counters(st, events);
	f->ctr = ctr;
	f->gen = st->gen;
	f->nctr = ctr ? spanperf_counters_count(ctr) : 0;
	/*
	 * The time outside the published window, at both edges: a profiler's
	 * sample that sees this context is then always within [start_ns,
	 * end_ns], even when its interrupt came between a clock read and the
	 * swap (on a VM that interrupt alone is 15 us).  Counters inside it,
	 * last: the span's counts hold as little of the library as they can.
	 */
	f->seq = ++st->seq;
	f->start_ns = mono_ns();
	f->prev = otel_thread_ctx_swap(f->rec);
	st->depth++;
	if (f->nctr && spanperf_counters_read(ctr, f->start))
		f->nctr = 0;
	return 0;
}

int spanperf_span_begin_ids(const char *name, const uint8_t trace_id[16], const uint8_t span_id[8],
			    uint8_t trace_flags)
{
	return span_begin(name, NULL, trace_id, span_id, trace_flags);
}

int spanperf_span_begin(const char *name)
{
	return span_begin(name, NULL, NULL, NULL, 0);
}

int spanperf_span_begin_events(const char *name, const char *events)
{
	return span_begin(name, events, NULL, NULL, 0);
}

int spanperf_span_begin_events_ids(const char *name, const char *events, const uint8_t trace_id[16],
				   const uint8_t span_id[8], uint8_t trace_flags)
{
	return span_begin(name, events, trace_id, span_id, trace_flags);
}

static void hex(char *out, const uint8_t *p, size_t n)
{
	static const char d[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[p[i] >> 4];
		out[2 * i + 1] = d[p[i] & 15];
	}
	out[2 * n] = 0;
}

/*
 * The attribute name `spanperf report --format otlp-json` gives a counter:
 * perf.task_clock_ms, perf.context_switches; other events the same way.
 */
static void attr_name(char *out, size_t len, const char *ev, bool clock)
{
	size_t k = (size_t)snprintf(out, len, "perf.");

	for (; *ev && k + 4 < len; ev++)
		out[k++] = (*ev >= 'a' && *ev <= 'z') || (*ev >= '0' && *ev <= '9') || *ev == '.' ? *ev
			   : (*ev >= 'A' && *ev <= 'Z')					  ? (char)(*ev - 'A' + 'a')
												  : '_';
	if (clock && k + 3 < len) {
		memcpy(out + k, "_ms", 3);
		k += 3;
	}
	out[k] = 0;
}

static bool is_clock(const char *ev)
{
	return !strncmp(ev, "task-clock", 10) || !strncmp(ev, "cpu-clock", 9);
}

static void export_span(struct thread_state *st, const struct spanperf_span *s)
{
	char trace[33], span[17], parent[17], key[160];
	struct sbuf *b = &st->line;
	bool root = true;
	int64_t off;
	ssize_t w;

	pthread_rwlock_rdlock(&exp_lock);
	if (exp_fd < 0)
		goto out;
	off = exp_realtime_off;
	hex(trace, s->trace_id, 16);
	hex(span, s->span_id, 8);
	hex(parent, s->parent_span_id, 8);
	for (int i = 0; i < 8; i++)
		root &= !s->parent_span_id[i];
	/* The thread's buffer, emptied: it stops growing at the longest line. */
	b->len = 0;
	b->err = 0;
	sbuf_printf(b, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":");
	sbuf_json_str(b, service);
	sbuf_printf(b, "}},{\"key\":\"process.pid\",\"value\":{\"intValue\":\"%d\"}}]},", (int)proc_pid);
	sbuf_printf(b, "\"scopeSpans\":[{\"scope\":{\"name\":\"libspanperf\",\"version\":\"%d.%d\"},\"spans\":[",
		    SPANPERF_VERSION_MAJOR, SPANPERF_VERSION_MINOR);
	sbuf_printf(b, "{\"traceId\":\"%s\",\"spanId\":\"%s\",\"parentSpanId\":\"%s\",\"name\":", trace, span,
		    root ? "" : parent);
	sbuf_json_str(b, s->name);
	sbuf_printf(b, ",\"kind\":1,\"startTimeUnixNano\":\"%llu\",\"endTimeUnixNano\":\"%llu\",\"attributes\":[",
		    (unsigned long long)((int64_t)s->start_ns + off), (unsigned long long)((int64_t)s->end_ns + off));
	sbuf_printf(b, "{\"key\":\"thread.id\",\"value\":{\"intValue\":\"%d\"}}", st->tid);
	for (int i = 0; i < s->nr_counters; i++) {
		bool clock = is_clock(s->counter_names[i]);

		attr_name(key, sizeof(key), s->counter_names[i], clock);
		/* The OTLP JSON mapping: int64 as a string; the clocks in ms as the OTLP writer gives them. */
		if (clock)
			sbuf_printf(b, ",{\"key\":\"%s\",\"value\":{\"doubleValue\":%.6f}}", key, s->deltas[i] / 1e6);
		else
			sbuf_printf(b, ",{\"key\":\"%s\",\"value\":{\"intValue\":\"%llu\"}}", key,
				    (unsigned long long)s->deltas[i]);
	}
	if (s->nr_unavailable) {
		/* What the machine could not count, as the Go binding's attribute says it. */
		sbuf_printf(b, ",{\"key\":\"perf.unavailable\",\"value\":{\"stringValue\":\"");
		for (int i = 0; i < s->nr_unavailable; i++)
			sbuf_printf(b, "%s%s", i ? "," : "", s->unavailable[i]);
		sbuf_printf(b, "\"}}");
	}
	sbuf_printf(b, "]}]}]}]}\n");
	if (b->err) {
		sp_fail(b->err, "out of memory writing span '%.60s' to the spans file", s->name);
		goto out;
	}
	/* One write per line: O_APPEND keeps lines of threads and processes whole. */
	w = write(exp_fd, b->p, b->len);
	if (w != (ssize_t)b->len)
		sp_fail(w < 0 ? -errno : -EIO, "span '%.60s' could not be written to the spans file: %s", s->name,
			w < 0 ? strerror(errno) : "short write");
out:
	pthread_rwlock_unlock(&exp_lock);
}

/* "name=count" at v + len, if it fits within max; the new length, else len. */
static size_t put_count(char *v, size_t len, size_t max, const char *name, uint64_t n)
{
	size_t nl = strlen(name);
	char d[20];
	int k = 0;

	do
		d[k++] = (char)('0' + n % 10);
	while ((n /= 10));
	if (len + nl + 1 + (size_t)k > max)
		return len;
	memcpy(v + len, name, nl);
	len += nl;
	v[len++] = '=';
	while (k)
		v[len++] = d[--k];
	return len;
}

/*
 * f's deltas into rec (COUNTERS_KEY): its own record, or (id: f's span id,
 * as "@<16 hex>:" first) the record of a child that ended inside it.
 */
static void put_final(struct otel_thread_ctx_record *rec, const char *id, const struct frame *f,
		      const uint64_t *now)
{
	char v[255];
	size_t len = 0, head = 0;

	if (id) {
		v[0] = '@';
		memcpy(v + 1, id, 16);
		v[17] = ':';
		len = head = 18;
	}
	for (int i = 0; i < f->nctr; i++) {
		const char *ev = spanperf_counters_name(f->ctr, i);
		size_t at = len > head ? len + 1 : len, l;

		if (!spanperf_counters_counted(f->ctr, i))
			continue;
		l = put_count(v, at, sizeof(v), ev, now[i] - f->start[i]);
		if (l == at && len > head) {
			/* Full: this value goes out, the count starts the next one. */
			if (otel_thread_ctx_record_add_attr(rec, COUNTERS_KEY, v, len))
				return;
			len = at = head;
			l = put_count(v, at, sizeof(v), ev, now[i] - f->start[i]);
		}
		if (l > at) {
			if (at > len)
				v[len] = ',';
			len = l;
		}
	}
	if (len > head)
		otel_thread_ctx_record_add_attr(rec, COUNTERS_KEY, v, len);
}

/*
 * The span's deltas, its final state while it is still the thread's
 * context: in its own record, where a recorder that sees the context end
 * reads them, and in the records of its children that ended inside it
 * (each depth's last one), since a recorder that last saw one of those
 * sees this span end only with it.  Not with an application's own key map
 * (SPANPERF_PROCESS_CTX=0), where key 2 is not ours to name.
 */
static void publish_final(struct thread_state *st, struct frame *f, const uint64_t *now)
{
	char id[17];

	if (pctx_off)
		return;
	put_final(f->rec, NULL, f, now);
	hex(id, f->rec->span_id, 8);
	for (int d = st->depth; d < MAX_DEPTH; d++) {
		struct frame *g = st->frames[d];

		if (!g || !g->rec || g->seq < f->seq)
			break;
		put_final(g->rec, id, f, now);
	}
}

int spanperf_span_end(struct spanperf_span *out)
{
	return spanperf_span_end_id(NULL, out);
}

int spanperf_span_end_id(const uint8_t span_id[8], struct spanperf_span *out)
{
	struct thread_state *st = self;
	uint64_t now[SPANPERF_MAX_COUNTERS];
	struct spanperf_span local, *s = out ? out : &local;
	bool exporting = __atomic_load_n(&exp_fd, __ATOMIC_RELAXED) >= 0;
	struct frame *f;
	int r = 0;

	if (!st || !st->depth)
		return sp_fail(-ENOENT, "spanperf_span_end: no span is open on this thread");
	f = st->frames[st->depth - 1];
	if (span_id && memcmp(span_id, f->rec->span_id, 8))
		return sp_fail(-ESRCH, "spanperf_span_end_id: the innermost span on this thread is '%.60s', another one",
			       f->name);
	if (f->nctr && (f->gen != __atomic_load_n(&sp_fork_gen, __ATOMIC_RELAXED) ||
			 (r = spanperf_counters_read(f->ctr, now))))
		f->nctr = 0;
	if (f->nctr)
		publish_final(st, f, now);
	otel_thread_ctx_swap(f->prev);
	s->end_ns = mono_ns(); /* after the swap: see spanperf_span_begin_ids */
	st->depth--;
	if (!out && !exporting)
		return r;

	memcpy(s->name, f->name, sizeof(s->name));
	memcpy(s->trace_id, f->rec->trace_id, 16);
	memcpy(s->span_id, f->rec->span_id, 8);
	memcpy(s->parent_span_id, f->parent, 8);
	s->start_ns = f->start_ns;
	s->wall_ns = s->end_ns - s->start_ns;
	s->nr_counters = 0;
	s->nr_unavailable = 0;
	for (int i = 0; i < f->nctr; i++) {
		const char *ev = spanperf_counters_name(f->ctr, i);

		if (spanperf_counters_counted(f->ctr, i)) {
			s->counter_names[s->nr_counters] = ev;
			s->deltas[s->nr_counters++] = now[i] - f->start[i];
		} else {
			s->unavailable[s->nr_unavailable] = ev;
			s->unavailable_why[s->nr_unavailable++] = spanperf_counters_why(f->ctr, i);
		}
	}
	if (exporting)
		export_span(st, s);
	return r;
}
