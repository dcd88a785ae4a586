/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stat --serve: the switch program's per-thread counters in the Prometheus
 * text format, summed per cgroup (v2 path) and comm, served by an endpoint
 * (web_serve.h: its own thread, deadlines, per-client limits, TLS and
 * basic auth) while stat's loop waits.
 */
#ifndef SP_STAT_SERVE_H
#define SP_STAT_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "web_serve.h" /* serve_addr_parse */

struct counter_set;
struct stat_serve;

/*
 * Listens on addr (saying why not, e.g. the port in use, or a bad
 * --web-config) and serves GET /metrics from cs, top series per metric and
 * the rest summed; web_config: TLS and basic auth (web_config.h), or NULL.
 */
int stat_serve__start(struct stat_serve **out, const char *addr, const char *web_config, struct counter_set *cs,
		      uint64_t top);
/*
 * The span names (--span), before any span is added: one histogram each.
 * 0 or -ENOMEM.
 */
int stat_serve__set_spans(struct stat_serve *s, const char *const *names, int n);
/* One finished span of --span idx: its wall time and its time on CPU. */
void stat_serve__span(struct stat_serve *s, int idx, uint64_t wall_ns, uint64_t oncpu_ns);
/*
 * --node-perf: node_exporter's perf collector series (node_perf_*_total with
 * a cpu label) on the same page, and the tracepoints tps[] ("SUBSYS:EVENT")
 * as its --collector.perf.tracepoint series.  0, or -errno said when nothing
 * can be counted or a tracepoint is bad.
 */
int stat_serve__node_perf(struct stat_serve *s, const char *const *tps, int nr_tps);
/* Stops serving; accepts NULL. */
void stat_serve__free(struct stat_serve *s);

struct sbuf;
/* A label value as the text format wants it: \, " and newline escaped, bytes outside ASCII as '?'. */
void serve_label(struct sbuf *b, const char *s);
/* A metric name from an event name: [a-zA-Z0-9_] kept, the rest '_'. */
void serve_metric_name(char *out, size_t len, const char *event);

#endif
