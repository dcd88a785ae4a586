/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stat --serve --node-perf: node_exporter's perf collector series
 * (node_perf_cpucycles_total{cpu="0"}, node_perf_page_faults_total, ...),
 * counted per CPU as it counts them (pid -1, every thread of the CPU), so its
 * dashboards and alerts keep working where spanperf replaces it.  An event
 * this machine cannot count has no series, as node_exporter leaves it out.
 */
#ifndef SP_NODE_PERF_H
#define SP_NODE_PERF_H

struct node_perf;
struct sbuf;

/*
 * Opens the events on every online CPU, and the tracepoints tps[]
 * ("SUBSYS:EVENT", served as node_perf_SUBSYS_EVENT{cpu}, as node_exporter's
 * --collector.perf.tracepoint): 0, or -errno said with pr_err when not one
 * event can be counted, or a tracepoint is misspelt, unknown or cannot be
 * opened (node_exporter fails then too).
 */
int node_perf__open(struct node_perf **out, const char *const *tps, int nr_tps);
/* The series, read now, in Prometheus' text format; 0 or -errno. */
int node_perf__render(struct node_perf *np, struct sbuf *b);
/* Accepts NULL. */
void node_perf__free(struct node_perf *np);

#endif
