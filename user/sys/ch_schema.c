// SPDX-License-Identifier: GPL-2.0
/* The ClickHouse tables (ch_schema.h), created where missing. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ch_http.h"
#include "ch_schema.h"
#include "ch_wire.h"
#include "log.h"
#include "sbuf.h"

#define WHERE_FROM "host String, container_id String, pod_uid String, cgroup String"

const struct ch_table_def ch_tables[CH_NR_TABLES] = {
	[CH_WINDOWS] = { "windows",
			 "date Date, token String, host String, start_ns UInt64, end_ns UInt64, event String, "
			 "clock UInt8, hz UInt64, samples UInt64, lost UInt64, sample_rows UInt64, "
			 "stack_rows UInt64, span_rows UInt64",
			 "(host, token)", "cityHash64(host)" },
	[CH_SAMPLES] = { "samples",
			 "date Date, time DateTime, token String, " WHERE_FROM ", pid UInt32, tid UInt32, "
			 "comm String, off_cpu UInt8, stack_id UInt64, count UInt64, period UInt64",
			 "(host, time, token, off_cpu, pid, tid, comm, stack_id)", "cityHash64(host)" },
	[CH_STACKS] = { "stacks",
			"date Date, stack_id UInt64, func Array(String), dso Array(String), "
			"build_id Array(String), offset Array(UInt64), kernel Array(UInt8), inlined Array(UInt8)",
			"stack_id", "stack_id" },
	[CH_SPANS] = { "spans",
		       "date Date, time DateTime, token String, " WHERE_FROM ", name String, source String, "
		       "pid UInt32, tid UInt32, comm String, start_ns UInt64, end_ns UInt64, samples UInt64, "
		       "unfinished UInt8, counter_names Array(String), counters Array(UInt64), "
		       "trace_id String, span_id String, has_ctx UInt8, on_cpu_ns Int64, has_split UInt8, "
		       "split_on UInt64, split_runq UInt64, split_off UInt64, split_sleep UInt64, "
		       "split_blocked UInt64, split_how String, off_ns UInt64, blocked_in String, "
		       "top_func Array(String), top_n Array(UInt64), waker_comm Array(String), "
		       "waker_tid Array(UInt32), waker_ns Array(UInt64)",
		       "(host, time, token, tid, start_ns, name)", "cityHash64(host)" },
};

static int run_ans(struct ch_http *c, struct sbuf *q, struct sbuf *ans, char *err, size_t errlen)
{
	int e;

	if (sbuf_add(q, "", 1))
		return -ENOMEM;
	e = ch_query(c, q->p, ans, err, errlen);
	q->len = 0;
	return e;
}

static int run(struct ch_http *c, struct sbuf *q, char *err, size_t errlen)
{
	return run_ans(c, q, NULL, err, errlen);
}

/* Each shard of the cluster that has no NAME_local of the first table yet, said once. */
static void say_missing_shards(struct ch_http *c, const struct ch_place *pl)
{
	struct sbuf q = {}, ans = {};
	char err[256];

	sbuf_printf(&q, "SELECT host_address, port FROM system.clusters WHERE cluster = ");
	ch_literal(&q, pl->cluster, strlen(pl->cluster));
	sbuf_printf(&q, " FORMAT TabSeparated");
	sbuf_add(&q, "", 1);
	if (!q.err && !ch_query(c, q.p, &ans, err, sizeof(err)) && !ans.len)
		pr_warn("cluster '%s' is not in the server's system.clusters", pl->cluster);
	for (char *line = ans.p, *nl; line && line < ans.p + ans.len; line = nl + 1) {
		struct sbuf rq = {}, n = {};
		char addr[128] = "";
		unsigned port = 0;

		nl = memchr(line, '\n', ans.p + ans.len - line);
		if (!nl)
			break;
		*nl = 0;
		if (sscanf(line, "%127[0-9A-Za-z.:_-]\t%u", addr, &port) != 2)
			continue;
		sbuf_printf(&rq, "SELECT count() FROM remote('%s:%u', system.tables) WHERE database = ", addr, port);
		ch_literal(&rq, pl->db, strlen(pl->db));
		sbuf_printf(&rq, " AND name = '%s_local' FORMAT TabSeparated", ch_tables[0].name);
		sbuf_add(&rq, "", 1);
		if (!rq.err && !ch_query(c, rq.p, &n, err, sizeof(err)) && n.len && n.p[0] == '0')
			pr_warn("shard %s:%u of cluster '%s' has no %s.%s_local yet: an agent sending to it creates "
				"them (ClickHouse creates tables on other servers only through ZooKeeper); rows for it "
				"wait in the Distributed tables' queues",
				addr, port, pl->cluster, pl->db, ch_tables[0].name);
		sbuf_free(&rq);
		sbuf_free(&n);
	}
	sbuf_free(&q);
	sbuf_free(&ans);
}

/* The tables and the database on the server c talks to; with a cluster, NAME_local and its Distributed NAME. */
static int create_on(struct ch_http *c, const struct ch_place *pl, char *err, size_t errlen)
{
	struct sbuf q = {};
	int e;

	sbuf_printf(&q, "CREATE DATABASE IF NOT EXISTS %s", pl->db);
	e = run(c, &q, err, errlen);
	for (int i = 0; !e && i < CH_NR_TABLES; i++) {
		const struct ch_table_def *t = &ch_tables[i];

		sbuf_printf(&q,
			    "CREATE TABLE IF NOT EXISTS %s.%s%s (%s) ENGINE = ReplacingMergeTree() "
			    "PARTITION BY date ORDER BY %s",
			    pl->db, t->name, pl->cluster ? "_local" : "", t->columns, t->order_by);
		e = run(c, &q, err, errlen);
		if (e || !pl->cluster)
			continue;
		sbuf_printf(&q, "CREATE TABLE IF NOT EXISTS %s.%s AS %s.%s_local ENGINE = Distributed(%s, %s, %s_local, %s)",
			    pl->db, t->name, pl->db, t->name, pl->cluster, pl->db, t->name, t->shard_by);
		e = run(c, &q, err, errlen);
	}
	sbuf_free(&q);
	return e;
}

/*
 * url with its host replaced by addr (an IP address system.clusters gave:
 * digits, dots, colons and hex letters only; IPv6 in brackets), its scheme
 * and port kept.  -EINVAL for an address of any other bytes.
 */
static int node_url(const char *url, const char *addr, char *out, size_t len)
{
	const char *host = strstr(url, "://"), *end, *port = NULL;
	bool v6 = strchr(addr, ':') != NULL;

	if (!host || !*addr || strspn(addr, "0123456789abcdefABCDEF.:") != strlen(addr))
		return -EINVAL;
	host += 3;
	end = host + strcspn(host, "/?#");
	for (const char *p = end; p > host; p--) {
		if (p[-1] == ']')
			break;
		if (p[-1] == ':') {
			port = p - 1;
			break;
		}
	}
	if (snprintf(out, len, "%.*s%s%s%s%.*s/", (int)(host - url), url, v6 ? "[" : "", addr, v6 ? "]" : "",
		     port ? (int)(end - port) : 0, port ? port : "") >= (int)len)
		return -EINVAL;
	return 0;
}

/*
 * Each node of pl's cluster (its distinct addresses in the system.clusters
 * c answers), with its own connection: fn on it; a node that fails is said
 * (what) and left.
 */
typedef int (*node_fn)(struct ch_http *n, const struct ch_place *pl, void *arg, char *err, size_t errlen);

static void each_node(struct ch_http *c, const struct ch_place *pl, const char *what, node_fn fn, void *arg)
{
	struct sbuf q = {}, ans = {};
	char err[512];

	sbuf_printf(&q, "SELECT DISTINCT host_address FROM system.clusters WHERE cluster = ");
	ch_literal(&q, pl->cluster, strlen(pl->cluster));
	sbuf_printf(&q, " FORMAT TabSeparated");
	sbuf_add(&q, "", 1);
	if (q.err || ch_query(c, q.p, &ans, err, sizeof(err)))
		goto cleanup;
	for (char *line = ans.p, *nl; line && line < ans.p + ans.len; line = nl + 1) {
		struct ch_http_opts ho = { .password_file = pl->password_file, .ca_file = pl->ca_file };
		struct ch_http *n = NULL;
		char url[512];
		int e;

		nl = memchr(line, '\n', ans.p + ans.len - line);
		if (!nl)
			break;
		*nl = 0;
		if (node_url(ch_http__url(c), line, url, sizeof(url))) {
			pr_warn("cluster '%s' names a node that is not an IP address: left out", pl->cluster);
			continue;
		}
		ho.url = url;
		err[0] = 0;
		e = ch_http__open(&n, &ho, err, sizeof(err)) ?: fn(n, pl, arg, err, sizeof(err));
		if (e)
			pr_warn("%s on node %s of cluster '%s': %s", what, url, pl->cluster, err[0] ? err : strerror(-e));
		ch_http__free(n);
	}
cleanup:
	sbuf_free(&q);
	sbuf_free(&ans);
}

static int create_node(struct ch_http *n, const struct ch_place *pl, void *arg, char *err, size_t errlen)
{
	(void)arg;
	return create_on(n, pl, err, errlen);
}

int ch_schema_create(struct ch_http *c, const struct ch_place *pl, char *err, size_t errlen)
{
	int e = create_on(c, pl, err, errlen);

	if (!e && pl->cluster) {
		each_node(c, pl, "cannot create the tables", create_node, NULL);
		say_missing_shards(c, pl);
	}
	return e;
}

/* Whether name is a table of pl that holds rows (NAME, or NAME_local with a cluster), and which. */
static bool ours(const struct ch_place *pl, const char *name, enum ch_table *t)
{
	for (int i = 0; i < CH_NR_TABLES; i++) {
		size_t k = strlen(ch_tables[i].name);

		if (!strncmp(name, ch_tables[i].name, k) && !strcmp(name + k, pl->cluster ? "_local" : "")) {
			*t = i;
			return true;
		}
	}
	return false;
}

/* Retention on the server n talks to: its days' partitions older than the bound dropped. */
static int retain_on(struct ch_http *n, const struct ch_place *pl, unsigned *dropped, char *err, size_t errlen)
{
	struct sbuf q = {}, ans = {};
	time_t cut = time(NULL) - (time_t)pl->retention_days * 86400;
	struct rb_in in;
	int e;

	/* Partitioned by date: each active part's min_date is its partition's day. */
	sbuf_printf(&q, "SELECT DISTINCT table, toUInt16(min_date) FROM system.parts WHERE active AND database = ");
	ch_literal(&q, pl->db, strlen(pl->db));
	sbuf_printf(&q, " AND max_date < toDate(%lld) FORMAT RowBinary", (long long)cut);
	e = run_ans(n, &q, &ans, err, errlen);
	in = (struct rb_in){ (const uint8_t *)ans.p, (const uint8_t *)ans.p + ans.len, false };
	while (!e && rb_more(&in)) {
		size_t len;
		const char *name = rb_get_str(&in, &len);
		unsigned day = rb_get_u16(&in);
		char tname[64] = "", date[16];
		time_t t = (time_t)day * 86400;
		struct tm tm;
		enum ch_table tab;

		if (in.bad)
			break;
		if (len >= sizeof(tname))
			continue;
		memcpy(tname, name, len);
		if (!ours(pl, tname, &tab) || !gmtime_r(&t, &tm))
			continue;
		strftime(date, sizeof(date), "%Y-%m-%d", &tm);
		/* The names and the date are ours, not the server's bytes: a table of ours, a day's number. */
		sbuf_printf(&q, "ALTER TABLE %s.%s%s DROP PARTITION '%s'", pl->db, ch_tables[tab].name,
			    pl->cluster ? "_local" : "", date);
		e = run(n, &q, err, errlen);
		if (!e && dropped)
			(*dropped)++;
	}
	if (!e && in.bad)
		e = set_errorf(err, errlen, -EBADMSG, "ClickHouse at %s answered system.parts' rows in a form not expected",
			       ch_http__url(n));
	sbuf_free(&q);
	sbuf_free(&ans);
	return e;
}

static int retain_node(struct ch_http *n, const struct ch_place *pl, void *arg, char *err, size_t errlen)
{
	return retain_on(n, pl, arg, err, errlen);
}

int ch_schema_retain(struct ch_http *c, const struct ch_place *pl, unsigned *dropped, char *err, size_t errlen)
{
	if (!pl->retention_days)
		return 0;
	if (!pl->cluster)
		return retain_on(c, pl, dropped, err, errlen);
	each_node(c, pl, "cannot drop old partitions", retain_node, dropped);
	return 0;
}
