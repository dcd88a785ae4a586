/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A ClickHouse server over its HTTP interface, with libcurl: queries and
 * gzipped inserts as POSTs, https where the URL says so.  The user and
 * password come from CLICKHOUSE_USER and CLICKHOUSE_PASSWORD or a password
 * file, never from the command line (a URL that carries one is refused),
 * and go as HTTP basic auth.
 */
#ifndef SP_CH_HTTP_H
#define SP_CH_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "sbuf.h"

struct ch_http;

struct ch_http_opts {
	const char *url;	   /* http[s]://HOST:PORT[/] */
	const char *password_file; /* --clickhouse-password-file, or NULL: CLICKHOUSE_PASSWORD */
	long timeout_ms;	   /* a request's whole time; 0: 10 s */
	const char *ca_file;	   /* https: the CA certificates to trust (PEM), or NULL: the system's */
};

/* 0, or -EINVAL with err saying what is wrong with the URL or the password file. */
int ch_http__open(struct ch_http **out, const struct ch_http_opts *o, char *err, size_t errlen);
void ch_http__free(struct ch_http *c);
/* The URL as given (for messages). */
const char *ch_http__url(const struct ch_http *c);
/*
 * Every request from now on, the one running in another thread too, ends
 * within timeout_ms (the agent's stop: its last window gets one short try).
 */
void ch_http__set_timeout(struct ch_http *c, long timeout_ms);

/*
 * sql as the POST body; the answer into out (appended) unless NULL.  0;
 * -EPROTO where the server answered an error (err: its status and first
 * line); -ECONNREFUSED, -ETIMEDOUT or -EIO where it did not answer whole.
 */
int ch_query(struct ch_http *c, const char *sql, struct sbuf *out, char *err, size_t errlen);
/* "INSERT INTO t FORMAT RowBinary" in the URL, gz (a gzipped body, ch_gzip) the POST body; errors as ch_query. */
int ch_insert(struct ch_http *c, const char *sql, const void *gz, size_t n, char *err, size_t errlen);
/* Whether an error of ch_query is the server's answer (not the network's). */
static inline bool ch_answered(int e)
{
	return e == -71; /* -EPROTO */
}

/* body gzipped into out (appended); 0 or -ENOMEM. */
int ch_gzip(const void *body, size_t n, struct sbuf *out);

#endif
