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
	/* The cluster's other nodes are reached at their addresses, with the URL's scheme and port and these */
	const char *password_file; /* or NULL: CLICKHOUSE_PASSWORD */
	const char *ca_file;	   /* https: the CA to trust, or NULL: the system's */
	unsigned retention_days;   /* 0: keep everything */
};

/*
 * CREATE ... IF NOT EXISTS of the database and every table on the server
 * c talks to; with a cluster, each table as NAME_local and NAME, a
 * Distributed table over the cluster's NAME_local, there and on every
 * other node of the cluster (system.clusters' addresses, each over its own
 * HTTP at the URL's scheme and port: ClickHouse 18.16 runs ON CLUSTER only
 * through ZooKeeper).  A node that cannot be reached is said and left; the
 * shards still without local tables are said once.  0 or -errno (err said:
 * the server c talks to failed).
 */
int ch_schema_create(struct ch_http *c, const struct ch_place *pl, char *err, size_t errlen);

/*
 * Retention: every day's partition older than pl->retention_days days
 * (by the partition's date, UTC) dropped from each table, on every node
 * with a cluster (its NAME_local); *dropped counts them.  0 or -errno (err
 * said: the server c talks to failed).
 */
int ch_schema_retain(struct ch_http *c, const struct ch_place *pl, unsigned *dropped, char *err, size_t errlen);

#endif
