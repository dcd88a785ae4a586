// SPDX-License-Identifier: GPL-2.0
/* spanperf report: reads a perf.data back and summarizes its samples. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "perf_data.h"
#include "report_spans.h"
#include "util.h"

enum sort_key { SORT_COMM = 1, SORT_PID = 2, SORT_TID = 4 };

struct row {
	__u32 pid, tid;
	const char *comm;
	__u64 samples, period;
};

struct report {
	const char *input;
	unsigned sort;
	bool json;
	struct pd_reader *rd;
	struct u64_map comms; /* tid -> index into comm_names */
	char **comm_names;
	size_t nr_comm_names;
	struct row *rows;
	size_t nr_rows;
	struct u64_map row_of; /* key -> row index + 1 */
	__u64 total;
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: spanperf report [-i FILE] [--sort KEYS] [--spans] [--format text|json]\n\n"
		     "  -i, --input FILE     perf.data to read (default perf.data)\n"
		     "  -s, --sort KEYS      comma list of comm, pid, tid (default comm,pid)\n"
		     "      --spans          spans recorded with --span, joined with their samples\n"
		     "      --bpf-samples    with --spans --format json: add the count BPF kept\n"
		     "      --format FMT     text (default) or json: one object per row or span\n"
		     "  -h, --help           this text\n\n"
		     "Examples:\n"
		     "  spanperf report -i perf.data\n"
		     "  spanperf report --sort tid --format json\n"
		     "  spanperf report --spans --format json | jq .\n");
}

static int parse_sort(const char *s, unsigned *out)
{
	char *copy = strdup(s), *tok, *save = NULL;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	*out = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "comm"))
			*out |= SORT_COMM;
		else if (!strcmp(tok, "pid"))
			*out |= SORT_PID;
		else if (!strcmp(tok, "tid"))
			*out |= SORT_TID | SORT_PID;
		else
			err = -EINVAL;
	}
	free(copy);
	return err ?: (*out ? 0 : -EINVAL);
}

static const char *comm_of(struct report *r, __u32 tid)
{
	uint64_t *v = u64_map_get(&r->comms, tid, false);

	/* The idle task has no COMM record; perf calls it swapper too. */
	return v ? r->comm_names[*v] : tid == 0 ? "swapper" : "[unknown]";
}

static int note_comm(struct report *r, const struct pd_event *ev)
{
	const char *p = (const char *)ev->hdr + 8;
	size_t max = ev->hdr->size - 16;
	__u32 tid;
	uint64_t *v;
	char **nn;

	if (ev->hdr->size < 24 || !memchr(p + 8, 0, max))
		return 0;
	memcpy(&tid, p + 4, 4);
	nn = realloc(r->comm_names, (r->nr_comm_names + 1) * sizeof(*nn));
	if (!nn)
		return -ENOMEM;
	r->comm_names = nn;
	nn[r->nr_comm_names] = strdup(p + 8);
	v = u64_map_get(&r->comms, tid, true);
	if (!nn[r->nr_comm_names] || !v)
		return -ENOMEM;
	*v = r->nr_comm_names++;
	return 0;
}

static int add_sample(struct report *r, const struct pd_sample *s)
{
	const char *comm = comm_of(r, s->tid);
	__u64 key = 0;
	uint64_t *v;
	struct row *row;

	if (r->sort & SORT_TID)
		key = s->tid;
	else if (r->sort & SORT_PID)
		key = s->pid;
	if (r->sort & SORT_COMM) {
		__u64 h = 1469598103934665603ull; /* FNV-1a of the name */

		for (const char *c = comm; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ull;
		key = key * 1000003 ^ h;
	}
	v = u64_map_get(&r->row_of, key, true);
	if (!v)
		return -ENOMEM;
	if (!*v) {
		struct row *nr = realloc(r->rows, (r->nr_rows + 1) * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		r->rows = nr;
		nr[r->nr_rows] = (struct row){ s->pid, s->tid, comm, 0, 0 };
		*v = ++r->nr_rows;
	}
	row = &r->rows[*v - 1];
	row->samples++;
	row->period += s->period;
	r->total++;
	return 0;
}

static int cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples < y->samples ? 1 : -1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static void print(struct report *r)
{
	qsort(r->rows, r->nr_rows, sizeof(*r->rows), cmp_rows);
	if (!r->json) {
		printf("# %llu samples in %s\n#\n# %8s %10s  %-16s %8s %8s\n", (unsigned long long)r->total,
		       r->input, "Overhead", "Samples", "Command", "Pid", "Tid");
	}
	for (size_t i = 0; i < r->nr_rows; i++) {
		const struct row *row = &r->rows[i];
		double pct = r->total ? 100.0 * row->samples / r->total : 0;

		if (r->json) {
			struct sbuf b = {};

			sbuf_printf(&b, "{\"overhead\":%.4f,\"samples\":%llu,\"period\":%llu", pct,
				    (unsigned long long)row->samples, (unsigned long long)row->period);
			if (r->sort & SORT_COMM) {
				sbuf_printf(&b, ",\"comm\":");
				sbuf_json_str(&b, row->comm);
			}
			if (r->sort & SORT_PID)
				sbuf_printf(&b, ",\"pid\":%d", (int)row->pid);
			if (r->sort & SORT_TID)
				sbuf_printf(&b, ",\"tid\":%d", (int)row->tid);
			sbuf_printf(&b, "}\n");
			if (!b.err)
				fwrite(b.p, 1, b.len, stdout);
			sbuf_free(&b);
			continue;
		}
		printf("  %7.2f%% %10llu  %-16s", pct, (unsigned long long)row->samples, row->comm);
		if (r->sort & SORT_PID)
			printf(" %8d", (int)row->pid);
		if (r->sort & SORT_TID)
			printf(" %8d", (int)row->tid);
		printf("\n");
	}
}

int cmd_report(int argc, char **argv)
{
	enum { OPT_SPANS = 256, OPT_BPF_SAMPLES };
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "sort", required_argument, NULL, 's' },
		{ "format", required_argument, NULL, 'f' },
		{ "spans", no_argument, NULL, OPT_SPANS },
		{ "bpf-samples", no_argument, NULL, OPT_BPF_SAMPLES },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct report r = { .input = "perf.data", .sort = SORT_COMM | SORT_PID };
	bool spans = false, bpf_samples = false;
	struct pd_iter it = {};
	struct pd_event ev;
	char err[512];
	int c, e, ret = 1;

	sp_prog = "spanperf report";
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			r.input = optarg;
			break;
		case 's':
			if (parse_sort(optarg, &r.sort)) {
				pr_err("--sort '%s' is not a list of comm, pid and tid", optarg);
				return 1;
			}
			break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				pr_err("--format '%s' is neither text nor json", optarg);
				return 1;
			}
			r.json = !strcmp(optarg, "json");
			break;
		case OPT_SPANS:
			spans = true;
			break;
		case OPT_BPF_SAMPLES:
			bpf_samples = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			pr_err("option '%s' needs a value", argv[optind - 1]);
			return 1;
		default:
			pr_err("unknown option '%s'; see --help", argv[optind - 1]);
			return 1;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s'; the input file goes after -i", argv[optind]);
		return 1;
	}
	if (spans) {
		struct spans_report_opts so = { .input = r.input, .json = r.json, .bpf_samples = bpf_samples };

		if (spans_report(&so, err, sizeof(err))) {
			pr_err("%s", err);
			return 1;
		}
		return 0;
	}
	e = pd_reader__open(&r.rd, r.input, err, sizeof(err));
	if (e) {
		pr_err("%s", err);
		return 1;
	}
	/* Comms first: a file's rings are not in time order across CPUs. */
	while ((e = pd_reader__next(r.rd, &it, &ev)) > 0)
		if (ev.hdr->type == PERF_RECORD_COMM && note_comm(&r, &ev))
			goto oom;
	if (e < 0)
		goto bad;
	it.pos = 0;
	while ((e = pd_reader__next(r.rd, &it, &ev)) > 0)
		if (ev.hdr->type == PERF_RECORD_SAMPLE && add_sample(&r, &ev.sample))
			goto oom;
	if (e < 0)
		goto bad;
	print(&r);
	ret = 0;
	goto cleanup;
bad:
	pr_err("%s", r.rd->err);
	goto cleanup;
oom:
	pr_err("out of memory reading %s", r.input);
cleanup:
	for (size_t i = 0; i < r.nr_comm_names; i++)
		free(r.comm_names[i]);
	free(r.comm_names);
	free(r.rows);
	u64_map_free(&r.comms);
	u64_map_free(&r.row_of);
	pd_reader__free(r.rd);
	return ret;
}
