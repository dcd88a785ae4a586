/* SPDX-License-Identifier: GPL-2.0 */
/* What `spanperf agent` asks for, filled from argv by cmd/agent.c; the engine is agent.h. */
#ifndef SP_AGENT_OPTS_H
#define SP_AGENT_OPTS_H

#include <stdbool.h>
#include <stdint.h>

struct agent_opts {
	const char *url;	   /* --clickhouse */
	const char *password_file; /* --clickhouse-password-file */
	const char *ca_file;	   /* --clickhouse-ca: https's CA, or NULL: the system's */
	const char *cluster;	   /* --cluster, or NULL: one server */
	const char *database;	   /* --database (default spanperf) */
	const char *host_label;	   /* --host-label (default the hostname) */
	double window;		   /* --window seconds (default 10) */
	uint64_t freq;		   /* -F (default 19) */
	bool fp;		   /* --call-graph fp: frame pointers, not ehframe */
	bool offcpu, otel;
	const char **span_texts;   /* --span, as record's */
	int nr_spans;
	double duration;	   /* -d, 0: until INT or TERM */
	const char *spool;	   /* --spool DIR */
	uint64_t spool_max_mb;	   /* --spool-max (default 256) */
	const char *serve;	   /* --serve ADDR:PORT */
	const char *web_config;	   /* --web-config FILE: --serve's TLS and basic auth, or NULL */
	uint64_t retention_days;   /* --retention DAYS, 0: keep everything */
	int verbose;
};

void agent_opts_defaults(struct agent_opts *o);
void agent_opts_free(struct agent_opts *o);

#endif
