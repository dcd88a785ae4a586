// SPDX-License-Identifier: GPL-2.0
/*
 * The span join (report --spans, annotate, --folded --span-prefix) over a
 * recording the bytes make (fuzz_rec.h): spans, samples, off-CPU blocks,
 * wakers and scheduler records of overlapping threads and times.  Checked:
 * the split adds up (on + runq + off = duration, off = sleep + blocked,
 * DESIGN.md), JSON lines parse, OTLP JSON parses, and no text output
 * carries a control byte another process chose.
 *
 * Every input runs the whole report over thousands of instrumented lines:
 * entropic scheduling's bookkeeping of so many features costs 4/5 of the
 * time (perf), so the plain schedule runs five times as many inputs.
 * FUZZ_FLAGS: -entropic=0
 */
#include "fuzz_check.h"
#include "fuzz_rec.h"
#include "profile.h"
#include "report_out.h"
#include "report_spans.h"
#include "session.h"
#include "spans_view.h"

static void check_view(const struct spans_view *v)
{
	for (size_t i = 0; i < v->nr_rows; i++) {
		const struct spans_row *r = &v->row[i];
		const struct span_split *x = &r->split;
		__u64 dur = r->end - r->start;

		if (r->end < r->start)
			continue;
		if (r->has_split && (x->on + x->runq + x->off != dur || x->sleep + x->blocked != x->off)) {
			fprintf(stderr, "fuzz: span %zu [%llu, %llu] of tid %u split on %llu runq %llu off %llu (sleep %llu, D %llu)\n",
				i, (unsigned long long)r->start, (unsigned long long)r->end, r->tid,
				(unsigned long long)x->on, (unsigned long long)x->runq, (unsigned long long)x->off,
				(unsigned long long)x->sleep, (unsigned long long)x->blocked);
			abort();
		}
		if (v->offcpu && r->off_ns > dur) {
			fprintf(stderr, "fuzz: span %zu of %llu ns off CPU for %llu\n", i, (unsigned long long)r->off_ns,
				(unsigned long long)dur);
			abort();
		}
	}
}

/* A table for people: names escaped, so that no line is forged and no escape reaches a terminal. */
static void check_text(const char *what, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)p[i] < 0x20 && p[i] != '\n') || p[i] == 0x7f)
			fuzz_fail(what, p, n, i);
}

/* --folded --span-prefix: "frame;frame... COUNT" per line. */
static void check_folded(const char *p, size_t n)
{
	check_text("folded stacks: a control byte", p, n);
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(p + i, '\n', n - i), *sp;
		size_t len = nl ? (size_t)(nl - (p + i)) : n - i;

		sp = memrchr(p + i, ' ', len);
		if (!nl || !sp || sp + 1 == p + i + len || strspn(sp + 1, "0123456789") != (size_t)(p + i + len - sp - 1))
			fuzz_fail("folded stacks: a line that is not \"STACK COUNT\"", p, n, i);
		i += len + 1;
	}
}

static void span_prefix(const char *path, const char *ext)
{
	struct spans_report_opts so = { .input = path, .external = ext };
	struct session *sess = NULL;
	struct span_report *sr = NULL;
	struct profile *p = NULL;
	struct span_label *l = NULL;
	struct strpool pool = {};
	char err[512], *buf = NULL;
	size_t n = 0, len = 0;
	FILE *out;

	if (session__open(&sess, path, &(struct session_opts){ .root = FUZZ_ROOT }, err, sizeof(err)))
		return;
	if (profile__new(&p, sess, &(struct profile_opts){ .span_prefix = true }) ||
	    span_report__new(&sr, sess, &so, err, sizeof(err)) || session__run(sess, err, sizeof(err)) ||
	    span_report__finish(sr, err, sizeof(err)) || span_report__labels(sr, &pool, &l, &n))
		goto cleanup;
	for (size_t i = 0; i < n; i++)
		if (profile__add_prefix_span(p, l[i].tid, l[i].start, l[i].end, l[i].label))
			goto cleanup;
	if (profile__finish(p) || !(out = open_memstream(&buf, &len)))
		goto cleanup;
	if (report_folded(p, out, true))
		abort();
	fclose(out);
	check_folded(buf, len);
cleanup:
	free(buf);
	free(l);
	strpool_free(&pool);
	span_report__free(sr);
	profile__free(p);
	session__free(sess);
}

static void spans(const char *path, const char *ext, enum spans_format fmt)
{
	struct spans_report_opts so = { .input = path, .external = ext, .format = fmt, .bpf_samples = true };
	const struct spans_view *v;
	struct session *sess = NULL;
	struct span_report *sr = NULL;
	char err[512], *buf = NULL;
	size_t len = 0;
	FILE *out;
	int e;

	if (session__open(&sess, path, &(struct session_opts){ .root = FUZZ_ROOT }, err, sizeof(err)))
		return;
	if (span_report__new(&sr, sess, &so, err, sizeof(err)) || session__run(sess, err, sizeof(err)) ||
	    span_report__finish(sr, err, sizeof(err)) || span_report__view(sr, &v))
		goto cleanup;
	check_view(v);
	if (!(out = open_memstream(&buf, &len)))
		goto cleanup;
	e = span_report__print(sr, out, err, sizeof(err));
	fclose(out);
	if (e)
		goto cleanup;
	if (fmt == SPANS_JSON)
		check_json_lines("report --spans --format json", buf, len);
	else if (fmt == SPANS_OTLP)
		check_json("report --spans --format otlp-json", buf, len);
	else
		check_text("report --spans: a control byte in the table", buf, len);
cleanup:
	free(buf);
	span_report__free(sr);
	session__free(sess);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_rec rec = {};
	const char *ext;

	if (fuzz_recording(data, size, &rec))
		return 0;
	/* With the spans it wrote, annotate's spans file is read too (annotate: the recording's and its). */
	ext = rec.ext[0] && rec.opts & 1 ? rec.ext : NULL;
	if (rec.opts & 2)
		span_prefix(rec.path, ext);
	else
		spans(rec.path, ext, (rec.opts >> 2) % 3);
	return 0;
}
