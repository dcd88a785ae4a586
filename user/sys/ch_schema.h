/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tables spanperf keeps in ClickHouse: the contract between the agent
 * that writes them and report --clickhouse that reads them, documented in
 * docs/clickhouse.md.  One definition serves both sides (the columns'
 * order is RowBinary's order), and it works on Debian's ClickHouse 18.16
 * and on current ClickHouse alike: no DateTime64, Map, LowCardinality,
 * CODEC, TTL or skip indexes.  Every table is a ReplacingMergeTree
 * partitioned by day (retention is dropping old partitions) whose sorting
 * key is a row's identity within its window's token, so a window sent twice
 * collapses, and the readers add up any() of each identity, so that it
 * never counts twice even before the merge.
 */
#ifndef SP_CH_SCHEMA_H
#define SP_CH_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>

struct ch_http;

enum ch_table { CH_WINDOWS, CH_SAMPLES, CH_STACKS, CH_SPANS, CH_NR_TABLES };

struct ch_table_def {
	const char *name;
	const char *columns;	 /* "name Type, ..." in RowBinary order */
	const char *order_by;	 /* the row's identity */
	const char *shard_by;	 /* the Distributed table's sharding key */
};
extern const struct ch_table_def ch_tables[CH_NR_TABLES];

/* The database and, with a cluster, the table names the readers and writers use. */
struct ch_place {
	const char *db;
	const char *cluster; /* NULL: one server */
};

/*
 * CREATE ... IF NOT EXISTS of the database and every table on the server
 * c talks to; with a cluster, each table as NAME_local there and NAME, a
 * Distributed table over the cluster's NAME_local.  Shards that lack the
 * local tables (ClickHouse 18.16 creates on others only through ZooKeeper)
 * are said once, by their addresses from system.clusters.  0 or -errno
 * (err said).
 */
int ch_schema_create(struct ch_http *c, const struct ch_place *pl, char *err, size_t errlen);

#endif
