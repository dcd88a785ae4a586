// SPDX-License-Identifier: GPL-2.0
/*
 * The wall split of spans (span_wall.c): off-CPU blocks, their wakers and
 * the scheduler's records of any threads and times, in any order, then
 * spans of any edges asked about them.  Checked, whatever the records say:
 * a span's time off CPU is no more than its wall time, its blocking stacks
 * and wakers come heaviest first and add up to no more than that, and a
 * split's parts add up to the wall (on + runq + off, off = sleep + blocked).
 */
#include "fuzz_check.h"
#include "fuzz_rec.h"
#include "session.h"
#include "span_wall.h"

/* A file of the three attrs span_wall takes, made once: each input gets a session of it. */
static char path[PATH_MAX];

static void make_file(void)
{
	struct perf_event_attr off, waker, sched;
	struct pd_meta meta = { .clockid = -1 };
	struct pd_writer *w;
	__u64 id;

	snprintf(path, sizeof(path), "%s/wall.data", fz_dir_get());
	offcpu__attr(&off);
	offcpu__waker_attr(&waker);
	offcpu__sched_attr(&sched);
	if (pd_writer__open(&w, path))
		abort();
	id = OFFCPU_ID;
	if (pd_writer__add_attr(w, &off, OFFCPU_EVENT_NAME, &id, 1))
		abort();
	id = OFFCPU_WAKER_ID;
	if (pd_writer__add_attr(w, &waker, OFFCPU_WAKER_EVENT_NAME, &id, 1))
		abort();
	id = SCHED_ID;
	if (pd_writer__add_attr(w, &sched, SCHED_EVENT_NAME, &id, 1) || pd_writer__begin(w) ||
	    pd_writer__finish(w, &meta))
		abort();
	pd_writer__free(w);
}

static void check_tops(const char *what, const struct span_wall_stack *st, int n, __u64 off)
{
	__u64 sum = 0;

	if (n < 0 || n > SPAN_WALL_TOP)
		abort();
	for (int k = 0; k < n; k++) {
		sum += st[k].ns;
		if (!st[k].ns || (k && st[k].ns > st[k - 1].ns) || st[k].nr > SPAN_WALL_FRAMES) {
			fprintf(stderr, "fuzz: %s %d of %d: %llu ns, %u frames\n", what, k, n,
				(unsigned long long)st[k].ns, st[k].nr);
			abort();
		}
		for (__u32 i = 0; i < st[k].nr; i++)
			if (!st[k].frame[i])
				abort();
	}
	if (sum > off) {
		fprintf(stderr, "fuzz: %s add up to %llu ns of %llu off CPU\n", what, (unsigned long long)sum,
			(unsigned long long)off);
		abort();
	}
}

static void check_split(const char *what, const struct span_split *x, __u64 wall)
{
	if (x->on + x->runq + x->off != wall || x->sleep + x->blocked != x->off) {
		fprintf(stderr, "fuzz: %s of %llu ns: on %llu runq %llu off %llu (sleep %llu, D %llu)\n", what,
			(unsigned long long)wall, (unsigned long long)x->on, (unsigned long long)x->runq,
			(unsigned long long)x->off, (unsigned long long)x->sleep, (unsigned long long)x->blocked);
		abort();
	}
}

/* One record into the wall, as the session would hand it over. */
static void add(struct span_wall *w, struct fz *f)
{
	static const struct pd_attr none;
	__u64 chain[16];
	char raw[64] = {};
	struct pd_event ev = { .attr = &none };
	struct pd_sample *s = &ev.sample;
	struct sess_sample ss = { .ev = &ev, .comm = "comm" };
	unsigned op = fz_take(f, 1);

	s->tid = 100 + (op >> 2 & 3);
	s->pid = s->tid & ~1u;
	s->time = fz_take(f, 2) * 10;
	s->period = fz_take(f, 2) * (op & 0x40 ? 10 : 1);
	s->callchain_nr = fz_chain(f, chain);
	s->callchain = chain;
	ss.kernel = op & 0x80;
	switch (op & 3) {
	case 0:
		ss.kind = SESS_OFFCPU;
		s->cpu_res = op & 0x20 ? OFFCPU_RES_SUM : 0;
		break;
	case 1: {
		struct waker_rec r = { .magic = WAKER_REC_MAGIC, .version = 1, .size = sizeof(r) };

		ss.kind = SESS_WAKER;
		r.wakee_tid = 100 + (op >> 4 & 3);
		r.block_end_ns = op & 0x20 ? s->time : fz_take(f, 2) * 10;
		r.wake_ns = fz_take(f, 2) * 10;
		r.ctx = fz_take(f, 1) % 6;
		fz_str(f, r.comm, sizeof(r.comm));
		memcpy(raw, &r, sizeof(r));
		s->raw = raw;
		s->raw_size = FZ_RAW_SIZE(sizeof(r));
		break;
	}
	case 2: {
		struct sched_rec r = { .magic = SCHED_REC_MAGIC, .version = 1, .size = sizeof(r) };
		unsigned k = fz_take(f, 1);

		ss.kind = SESS_SCHED;
		r.state = k % 4;
		r.flags = k & 4 ? SCHED_HAS_RUN_DELAY : 0;
		r.run_delay = fz_take(f, 2) * 10;
		memcpy(raw, &r, sizeof(r));
		s->raw = raw;
		s->raw_size = FZ_RAW_SIZE(sizeof(r));
		break;
	}
	default:
		ss.kind = SESS_SAMPLING; /* not the wall's: ignored */
	}
	if (span_wall__add(w, &ss))
		abort();
}

static void ask(struct span_wall *w, struct fz *f)
{
	struct span_wall_stack st[SPAN_WALL_TOP];
	struct span_split x;
	__u32 tid = 100 + (fz_take(f, 1) & 3);
	__u64 start = fz_take(f, 2) * 10, end = fz_take(f, 2) * 10, wall = end > start ? end - start : 0;
	__u64 off = span_wall__off_ns(w, tid, start, end);
	struct span_sched sched = { .how = fz_take(f, 1) % 5 };

	if (off > wall) {
		fprintf(stderr, "fuzz: [%llu, %llu] of tid %u: %llu ns off CPU\n", (unsigned long long)start,
			(unsigned long long)end, tid, (unsigned long long)off);
		abort();
	}
	check_tops("blocking stacks", st, span_wall__off_top(w, tid, start, end, st), off);
	check_tops("wakers", st, span_wall__woken_by(w, tid, start, end, st), off);
	(void)span_wall__top_frame(w, tid, start, end);
	if (span_wall__sched_split(w, tid, start, end, &x))
		check_split("the scheduler records' split", &x, wall);
	sched.on_ns = fz_take(f, 2) * 10;
	sched.runq_ns = fz_take(f, 2) * 10;
	sched.blocked_ns = fz_take(f, 2) * 10;
	if (span_split_of(&sched, wall, &x))
		check_split("a span record's split", &x, wall);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	struct session *sess = NULL;
	struct span_wall *w = NULL;
	char err[256];
	unsigned n;

	if (!path[0])
		make_file();
	if (session__open(&sess, path, &(struct session_opts){ .root = FUZZ_ROOT }, err, sizeof(err)) ||
	    span_wall__new(&w, sess))
		abort();
	/* The records, then the spans: the first byte says how many records. */
	for (n = fz_take(&f, 1); n-- && f.n;)
		add(w, &f);
	span_wall__finish(w);
	while (f.n)
		ask(w, &f);
	span_wall__free(w);
	session__free(sess);
	return 0;
}
