// SPDX-License-Identifier: GPL-2.0
/* The perf.data reader and everything report builds on it, on any bytes. */
#include "fuzz_common.h"
#include "perf_data.h"
#include "profile.h"
#include "session.h"

static unsigned long long sink;

static int on_sample(void *ctx, const struct sess_sample *s)
{
	(void)ctx;
	sink += s->ev->sample.time + strlen(s->comm);
	return 0;
}

/* Every span the codec accepts, with the names the session found for it. */
static int on_span(void *ctx, const struct sess_span *s)
{
	struct session *sess = ctx;
	const char *comm = session__comm(sess, s->rec.tid, s->rec.end_ns);

	sink += s->rec.end_ns - s->rec.start_ns + strlen(s->name) + (comm ? strlen(comm) : 0) +
		session__pid_of(sess, s->rec.tid);
	return 0;
}

/*
 * A side-band record the codec reads writes back no larger, and that copy
 * reads and writes back to the same bytes: one walker, whatever the input.
 */
static void sideband_round_trip(const struct pd_event *ev)
{
	static unsigned char once[65536], twice[65536];
	const struct perf_event_attr *a = ev->attr ? &ev->attr->attr : NULL;
	struct pd_sideband r;
	long n, m;

	if (ev->hdr->type == PERF_RECORD_SAMPLE || pd_sideband_parse(a, ev->hdr, ev->hdr->size, &r))
		return;
	n = pd_sideband_write(once, sizeof(once), a, &r);
	if (n < 0 || n > ev->hdr->size || pd_sideband_parse(a, once, n, &r))
		abort();
	m = pd_sideband_write(twice, sizeof(twice), a, &r);
	if (m != n || memcmp(once, twice, n))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_reader *r = NULL;
	struct profile *p = NULL;
	struct session *sess = NULL;
	struct pd_iter it = {};
	struct pd_event ev;
	char path[64], err[512];
	int fd = fuzz_file(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	if (!pd_reader__open(&r, path, NULL, err, sizeof(err))) {
		static FILE *null;

		if (null || (null = fopen("/dev/null", "w")))
			pd_reader__print_features(r, null);
		while (pd_reader__next(r, &it, &ev) > 0)
			sideband_round_trip(&ev);
		pd_reader__free(r);
	}
	/*
	 * Symbol files come from a fixture root (a small kallsyms, no ELF), so
	 * the host's files neither slow the fuzzer down nor change its paths.
	 */
	if (!profile__load(&p, path, FUZZ_ROOT, err, sizeof(err)))
		profile__free(p);
	if (!session__open(&sess, path, &(struct session_opts){ .root = FUZZ_ROOT }, err, sizeof(err))) {
		static const struct session_ops ops = { .sample = on_sample, .span = on_span };

		session__process(sess, &ops, sess, err, sizeof(err));
		session__free(sess);
	}
	close(fd);
	return 0;
}
