/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stat --serve: the switch program's per-thread counters in the Prometheus
 * text format, summed per cgroup (v2 path) and comm, served by
 * libmicrohttpd's own thread while stat's loop waits.
 */
#ifndef SP_STAT_SERVE_H
#define SP_STAT_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

struct counter_set;
struct stat_serve;

/*
 * "PORT", ":PORT", "ADDR:PORT" or "[ADDR6]:PORT"; no address is loopback.
 * 0, or -EINVAL with one sentence in err.
 */
int serve_addr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len, char *err, size_t errlen);

/*
 * Listens on addr (saying why not, e.g. the port in use) and serves GET
 * /metrics from cs, top series per metric and the rest summed.
 */
int stat_serve__start(struct stat_serve **out, const char *addr, struct counter_set *cs, uint64_t top);
/*
 * The span names (--span), before any span is added: one histogram each.
 * 0 or -ENOMEM.
 */
int stat_serve__set_spans(struct stat_serve *s, const char *const *names, int n);
/* One finished span of --span idx: its wall time and its time on CPU. */
void stat_serve__span(struct stat_serve *s, int idx, uint64_t wall_ns, uint64_t oncpu_ns);
/*
 * --node-perf: node_exporter's perf collector series (node_perf_*_total with
 * a cpu label) on the same page.  0, or -errno said when nothing can be counted.
 */
int stat_serve__node_perf(struct stat_serve *s);
/* Stops serving; accepts NULL. */
void stat_serve__free(struct stat_serve *s);

struct sbuf;
/* A label value as the text format wants it: \, " and newline escaped, bytes outside ASCII as '?'. */
void serve_label(struct sbuf *b, const char *s);
/* A metric name from an event name: [a-zA-Z0-9_] kept, the rest '_'. */
void serve_metric_name(char *out, size_t len, const char *event);

#endif
