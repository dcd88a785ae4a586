// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf_sample.h"
#include "span_codec.h"
#include "util.h"

/* RAW is a u32 size and the payload, padded so that the record stays 8-byte aligned. */
#define RAW_SIZE(n) (((((n) + 4) + 7) & ~7ul) - 4)

_Static_assert(sizeof(struct sp_span) == 120, "files before the version field hold this layout");

void span_codec_attr(struct perf_event_attr *a)
{
	pd_bpf_output_attr(a, PERF_SAMPLE_RAW);
}

int span_codec_attr_name(char *buf, size_t len, const char *name)
{
	int n = snprintf(buf, len, "%s%s", SPAN_ATTR_PREFIX, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

const char *span_source_name(int source)
{
	switch (source) {
	case SP_SRC_KPROBE: return "kprobe";
	case SP_SRC_FENTRY: return "fentry";
	case SP_SRC_UPROBE: return "uprobe";
	case SP_SRC_SYSCALL: return "syscall";
	case SP_SRC_TRACEPOINT: return "tracepoint";
	case SP_SRC_EXTERNAL: return "external";
	case SP_SRC_OTEL: return "otel";
	default: return "unknown";
	}
}

void span_rec_from_bpf(struct span_rec *r, const struct sp_span *sp)
{
	*r = (struct span_rec){
		.magic = SPAN_REC_MAGIC, .version = SPAN_REC_VERSION, .size = SPAN_REC_SIZE(0),
		.start_ns = sp->start_ns, .end_ns = sp->end_ns, .ip = sp->ip, .samples = sp->samples,
		.pid = sp->pid, .tid = sp->tid, .cpu = sp->cpu, .idx = sp->idx, .depth = sp->depth,
		.flags = sp->flags & SP_SPAN_UNFINISHED, .source = sp->source,
	};
	memcpy(r->counters, sp->counters, sizeof(r->counters));
}

void span_rec_set_sched(struct span_rec *r, const struct sp_sched_split *sched)
{
	r->sched = (struct span_sched){ .on_ns = sched->on_ns, .runq_ns = sched->runq_ns,
					.blocked_ns = sched->blocked_ns, .how = sched->how };
}

long span_codec_write(void *buf, size_t bufsz, const struct perf_event_attr *attr, const struct span_rec *r)
{
	return span_codec_write_at(buf, bufsz, attr, r, r->end_ns);
}

long span_codec_write_at(void *buf, size_t bufsz, const struct perf_event_attr *attr, const struct span_rec *r,
			 __u64 time)
{
	char raw[RAW_SIZE(sizeof(struct span_rec))] = {};
	size_t attrs = SP_MIN((size_t)r->attrs_size, sizeof(r->attrs)), n = SPAN_REC_SIZE(attrs);
	size_t total = n + (r->sched.how ? sizeof(r->sched) : 0);
	struct pd_sample s = {
		.id = SPAN_ID_BASE + (r->idx < SP_MAX_SPANS ? r->idx : 0), .ip = r->ip, .pid = r->pid,
		.tid = r->tid, .time = time > r->end_ns ? time : r->end_ns, .cpu = r->cpu, .period = r->end_ns - r->start_ns,
		.raw_size = RAW_SIZE(total), .raw = raw,
	};
	bool kernel = r->source == SP_SRC_KPROBE || r->source == SP_SRC_FENTRY;

	memcpy(raw, r, n);
	if (r->sched.how)
		memcpy(raw + n, &r->sched, sizeof(r->sched));
	/* What is written is what size says, whatever the caller left there. */
	memcpy(raw + offsetof(struct span_rec, version), &(__u16){ SPAN_REC_VERSION }, 2);
	memcpy(raw + offsetof(struct span_rec, size), &(__u16){ total }, 2);
	memcpy(raw + offsetof(struct span_rec, attrs_size), &(__u16){ attrs }, 2);
	return pd_sample_write(buf, bufsz, attr, kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER, &s);
}

static bool named(const struct pd_attr *a, const char *prefix)
{
	return a && a->name && !strncmp(a->name, prefix, strlen(prefix));
}

const char *span_codec_name(const struct pd_attr *a)
{
	if (!named(a, SPAN_ATTR_PREFIX) || !(a->attr.sample_type & PERF_SAMPLE_RAW))
		return NULL;
	return a->name + strlen(SPAN_ATTR_PREFIX);
}

bool span_codec_is_counters(const struct pd_attr *a)
{
	return named(a, SPAN_COUNTERS_PREFIX);
}

int span_codec_counter_names(const struct pd_attr *a, char **names, int max)
{
	const char *p = a->name + strlen(SPAN_COUNTERS_PREFIX);
	int n = 0;

	while (*p && n < max) {
		size_t l = strcspn(p, ",");

		names[n] = strndup(p, l);
		if (!names[n]) {
			while (n--)
				free(names[n]);
			return -ENOMEM;
		}
		n++;
		p += l + (p[l] == ',');
	}
	return n;
}

int span_codec_decode(const struct pd_sample *s, struct span_rec *out)
{
	struct sp_span old;
	__u32 magic = 0;

	memset(out, 0, sizeof(*out));
	if (s->raw_size >= 4)
		memcpy(&magic, s->raw, 4);
	if (magic == SPAN_REC_MAGIC && s->raw_size >= 8) {
		struct span_rec hdr;

		memcpy(&hdr, s->raw, 8);
		if (hdr.size < offsetof(struct span_rec, pad) || hdr.size > s->raw_size)
			return -EINVAL;
		/* A newer writer's longer record: the part this reader knows. */
		memcpy(out, s->raw, SP_MIN((size_t)hdr.size, sizeof(*out)));
		/* Version 1 ends before attrs_size, which memset left 0; a size that lies drops the attributes. */
		if (hdr.size < SPAN_REC_SIZE(0) || out->attrs_size > hdr.size - SPAN_REC_SIZE(0) ||
		    out->attrs_size > sizeof(out->attrs))
			out->attrs_size = 0;
		/* Version 3's split follows the attributes; the copy above may have put bytes of it anywhere. */
		memset(&out->sched, 0, sizeof(out->sched));
		if (hdr.version >= 3 && hdr.size >= SPAN_REC_SIZE(out->attrs_size) + sizeof(out->sched))
			memcpy(&out->sched, (const char *)s->raw + SPAN_REC_SIZE(out->attrs_size), sizeof(out->sched));
	} else {
		if (s->raw_size < sizeof(old))
			return -EINVAL;
		memcpy(&old, s->raw, sizeof(old));
		span_rec_from_bpf(out, &old);
	}
	/*
	 * A span that ends before it starts is none (annotate refuses one in
	 * its JSON too): every output takes end - start as its duration and
	 * nests spans by their edges.
	 */
	return out->end_ns < out->start_ns ? -EINVAL : 0;
}
