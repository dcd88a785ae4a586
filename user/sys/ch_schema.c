// SPDX-License-Identifier: GPL-2.0
/* The ClickHouse tables (ch_schema.h), created where missing. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

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

static int run(struct ch_http *c, struct sbuf *q, char *err, size_t errlen)
{
	int e;

	if (sbuf_add(q, "", 1))
		return -ENOMEM;
	e = ch_query(c, q->p, NULL, err, errlen);
	q->len = 0;
	return e;
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

int ch_schema_create(struct ch_http *c, const struct ch_place *pl, char *err, size_t errlen)
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
	if (!e && pl->cluster)
		say_missing_shards(c, pl);
	sbuf_free(&q);
	return e;
}
