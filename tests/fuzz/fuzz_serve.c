// SPDX-License-Identifier: GPL-2.0
/*
 * stat --serve's endpoint (live/stat_serve.c) as a client reaches it: a
 * request of any bytes over a real socket, which libmicrohttpd parses and
 * our handler answers from counters whose threads (comms of any bytes,
 * cgroups, values), events and span histograms the input chooses too.  The
 * counters come from __wrap_counters__read and __wrap_counters__events
 * (linked with --wrap, see the Makefile): no BPF here.  Checked: any
 * answer is HTTP; a page of metrics is Prometheus' text format as its
 * parser takes it (UTF-8, each line a comment or a sample of a valid name
 * with escaped label values and a number, one HELP and TYPE per family).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <math.h>
#include <poll.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "counters.h"
#include "fuzz_check.h"
#include "fuzz_rec.h"
#include "stat_serve.h"

#define MAX_THREADS 16
#define MAX_EVENTS 4

static struct counter_event events[MAX_EVENTS];
static int nr_events;
static struct thread_counts threads[MAX_THREADS];
static int nr_threads;

const struct counter_event *__wrap_counters__events(const struct counter_set *s, int *n);
int __wrap_counters__read(struct counter_set *s, struct thread_counts **out, int *n);

const struct counter_event *__wrap_counters__events(const struct counter_set *s, int *n)
{
	(void)s;
	*n = nr_events;
	return events;
}

int __wrap_counters__read(struct counter_set *s, struct thread_counts **out, int *n)
{
	(void)s;
	*out = malloc((nr_threads ? nr_threads : 1) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	memcpy(*out, threads, nr_threads * sizeof(**out));
	*n = nr_threads;
	return 0;
}

static bool name_ok(const char *p, size_t n)
{
	if (!n || !(isalpha((unsigned char)p[0]) || p[0] == '_' || p[0] == ':'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)p[i]) || p[i] == '_' || p[i] == ':'))
			return false;
	return true;
}

/* One sample line: name{label="value",...} number. */
static void check_sample(const char *page, size_t len, const char *p, const char *end)
{
	const char *q = p;
	char num[64], *rest;
	double v;

	while (q < end && *q != '{' && *q != ' ')
		q++;
	if (!name_ok(p, q - p))
		fuzz_fail("metrics: a sample whose name Prometheus refuses", page, len, p - page);
	if (q < end && *q == '{') {
		for (q++; q < end && *q != '}';) {
			const char *k = q;

			while (q < end && *q != '=')
				q++;
			if (!name_ok(k, q - k) || q + 1 >= end || q[1] != '"')
				fuzz_fail("metrics: a label that is not name=\"value\"", page, len, k - page);
			for (q += 2; q < end && *q != '"'; q++)
				if (*q == '\\' && (q + 1 >= end || !strchr("\\\"n", *++q)))
					fuzz_fail("metrics: an escape the format does not have", page, len, q - page);
			if (q >= end)
				fuzz_fail("metrics: a label value that does not end", page, len, k - page);
			q++;
			if (q < end && *q == ',')
				q++;
		}
		if (q >= end)
			fuzz_fail("metrics: labels that do not end", page, len, p - page);
		q++;
	}
	if (q >= end || *q != ' ' || (size_t)(end - q - 1) >= sizeof(num))
		fuzz_fail("metrics: no value after the sample's name", page, len, q - page);
	memcpy(num, q + 1, end - q - 1);
	num[end - q - 1] = 0;
	if (!strcmp(num, "+Inf") || !strcmp(num, "-Inf") || !strcmp(num, "NaN"))
		return;
	v = strtod(num, &rest);
	if (*rest || rest == num || isnan(v))
		fuzz_fail("metrics: a value that is not a number", page, len, p - page);
}

static void check_metrics(const char *page, size_t len)
{
	char seen[64][128];
	int nseen = 0;

	check_utf8("metrics: a byte that is not UTF-8", page, len);
	for (const char *p = page, *end = page + len; p < end;) {
		const char *nl = memchr(p, '\n', end - p);

		if (!nl)
			fuzz_fail("metrics: a last line without its newline", page, len, p - page);
		if (!strncmp(p, "# HELP ", 7) || !strncmp(p, "# TYPE ", 7)) {
			const char *name = p + 7, *sp = memchr(name, ' ', nl - name);
			char key[128];

			if (!sp || !name_ok(name, sp - name))
				fuzz_fail("metrics: a HELP or TYPE of a name Prometheus refuses", page, len, p - page);
			snprintf(key, sizeof(key), "%.6s%.*s", p, (int)(sp - name), name);
			for (int i = 0; i < nseen; i++)
				if (!strcmp(seen[i], key))
					fuzz_fail("metrics: a second HELP or TYPE of one family", page, len, p - page);
			if (nseen < 64)
				snprintf(seen[nseen++], sizeof(seen[0]), "%s", key);
		} else if (*p != '#') {
			check_sample(page, len, p, nl);
		}
		p = nl + 1;
	}
}

/* A loopback port nobody listens on now: the server takes it at each input (SO_REUSEADDR). */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || getsockname(fd, (struct sockaddr *)&a, &l))
		abort();
	close(fd);
	return ntohs(a.sin_port);
}

/*
 * The request, then everything the server says until it closes, or until
 * 300 ms of silence: libmicrohttpd holds about one in five connections
 * whose request it could not parse, half-closed or not, until its timeout
 * (CONN_TIMEOUT_S, 10 s), seen on the plain binary too; that is the
 * endpoint's limit on clients (its own test), not an answer to check here.
 * An answer later than that is only not checked.
 */
static size_t exchange(int port, const uint8_t *req, size_t n, char *buf, size_t cap)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t len = 0;

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		abort();
	/* The server may answer and close before it has read it all: a reset, not a failure. */
	if (n)
		(void)!send(fd, req, n, MSG_NOSIGNAL);
	shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t r;

		if (poll(&p, 1, 300) <= 0)
			break;
		r = recv(fd, buf + len, cap - 1 - len, 0);
		if (r <= 0)
			break;
		len += r;
		if (len == cap - 1)
			break;
	}
	close(fd);
	buf[len] = 0;
	return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int port;
	static char buf[1 << 20];
	struct fz f = { data, size };
	char spans[3][24], addr[32];
	const char *names[3] = { spans[0], spans[1], spans[2] };
	struct stat_serve *s;
	int nspans;
	const char *body;
	size_t len;

	if (!port)
		port = free_port();
	nr_events = fz_take(&f, 1) % (MAX_EVENTS + 1);
	for (int i = 0; i < nr_events; i++) {
		events[i] = (struct counter_event){ .slot = (int)(fz_take(&f, 1) % 4) - 1 };
		events[i].is_clock = events[i].slot == 2;
		fz_str(&f, events[i].spec.name, sizeof(events[i].spec.name));
	}
	nr_threads = fz_take(&f, 1) % (MAX_THREADS + 1);
	for (int i = 0; i < nr_threads; i++) {
		threads[i] = (struct thread_counts){ .tid = 100 + i, .pid = 100 };
		fz_str(&f, threads[i].comm, sizeof(threads[i].comm));
		threads[i].cgroup_id = fz_take(&f, 1) & 1 ? fz_take(&f, 8) : 0;
		threads[i].oncpu_ns = fz_take(&f, 4) * 1000;
		for (int k = 0; k < nr_events; k++) {
			threads[i].value[k] = fz_take(&f, 4);
			threads[i].enabled[k] = fz_take(&f, 1);
			threads[i].running[k] = fz_take(&f, 1);
		}
	}
	nspans = fz_take(&f, 1) % 4;
	for (int i = 0; i < nspans; i++)
		fz_str(&f, spans[i], sizeof(spans[i]));
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	if (stat_serve__start(&s, addr, NULL, (struct counter_set *)&nr_events, fz_take(&f, 1) % 8) ||
	    stat_serve__set_spans(s, names, nspans))
		abort();
	for (unsigned n = fz_take(&f, 1) % 8; n--;) {
		unsigned idx = fz_take(&f, 1);

		stat_serve__span(s, idx % 4, fz_take(&f, 4) * 997, fz_take(&f, 4) * 997);
	}
	/* The rest is the request. */
	len = exchange(port, f.p, f.n, buf, sizeof(buf));
	stat_serve__free(s);
	if (!len)
		return 0; /* closed without an answer: a request it could not parse */
	if (strncmp(buf, "HTTP/1.", 7))
		fuzz_fail("serve: an answer that is not HTTP", buf, len, 0);
	body = strstr(buf, "\r\n\r\n");
	if (!strncmp(buf + 8, " 200 ", 5) && body && body[4]) {
		/* The first answer's body alone: a client may have asked twice on one connection. */
		const char *cl = strcasestr(buf, "\r\nContent-Length: ");
		size_t n = cl && cl < body ? strtoull(cl + 18, NULL, 10) : len - (body + 4 - buf);

		check_metrics(body + 4, SP_MIN(n, len - (size_t)(body + 4 - buf)));
	}
	return 0;
}
