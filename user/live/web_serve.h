/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The HTTP endpoint of what runs while a recording runs (stat --serve, and
 * the agent's --serve): libmicrohttpd on a thread of its own, GET and HEAD
 * only, the pages made by the caller's handler.  It holds against clients
 * it cannot trust, since any local user can connect:
 *
 * - a whole-request deadline (WEB_REQUEST_S from a connection's start, or
 *   from its last answer, to the end of the next): a client that sends a
 *   header byte every few seconds, or reads the answer as slowly, is cut
 *   then, where an idle timeout would wait forever;
 * - at most WEB_PER_CLIENT connections per client, of WEB_MAX_CONNS: a
 *   local client is its user (the socket's owner, asked of the kernel by
 *   sock_diag: every local user shares 127.0.0.1, and can bind any
 *   127.x.y.z), a remote one its address (its /64 for IPv6);
 * - with --web-config (web_config.h): TLS, and basic auth whose bcrypt
 *   checks are cached once passed and throttled per client once failed.
 */
#ifndef SP_WEB_SERVE_H
#define SP_WEB_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "sbuf.h"

#define WEB_REQUEST_S 5
#define WEB_MAX_CONNS 64
#define WEB_PER_CLIENT 8

/* A request's answer, as the handler makes it. */
struct web_reply {
	unsigned status;	  /* 200 unless the handler says otherwise */
	const char *content_type; /* text/plain unless the handler says otherwise */
	struct sbuf body;
};

/*
 * A GET or HEAD of url, on the server's thread, one at a time: 0 with r
 * filled, or -errno for a 500.
 */
typedef int (*web_handler)(void *arg, const char *url, struct web_reply *r);

struct web_opts {
	const char *addr;   /* PORT, :PORT, ADDR:PORT or [ADDR6]:PORT; no address is loopback */
	const char *flag;   /* the option that named addr, for messages: "--serve" */
	const char *config; /* --web-config FILE, or NULL */
	web_handler handler;
	void *arg;
};

struct web_server;

/*
 * "PORT", ":PORT", "ADDR:PORT" or "[ADDR6]:PORT"; no address is loopback.
 * 0, or -EINVAL with one sentence in err.
 */
int serve_addr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len, char *err, size_t errlen);
/* --web-config's file, read and checked as the server will: 0, or -errno with one sentence in err. */
int web_config_check(const char *path, char *err, size_t errlen);
/* Listens (saying why not: the port in use, a bad --web-config) and serves until freed; 0 or -errno. */
int web_server__start(struct web_server **out, const struct web_opts *o);
/* Stops serving; accepts NULL. */
void web_server__free(struct web_server *s);

#endif
