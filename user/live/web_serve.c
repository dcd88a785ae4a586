// SPDX-License-Identifier: GPL-2.0
/*
 * The endpoint's HTTP side: libmicrohttpd's own polling thread, plus a
 * watchdog thread for the deadline.  libmicrohttpd's timeout is an idle
 * one, which a byte every few seconds resets; the deadline is ours: the
 * watchdog shuts down (never closes: libmicrohttpd owns the descriptor) a
 * socket past it, and libmicrohttpd then reads its end and closes it.  The
 * two threads share the table of connections under one lock, and
 * libmicrohttpd says a connection closed (NOTIFY_CLOSED, which takes the
 * lock) before it closes its descriptor, so that no shutdown can hit a
 * descriptor already reused.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <sys/random.h>
#include <dlfcn.h>
#include <microhttpd.h>

#include "log.h"
#include "parse.h"
#include "sha256.h"
#include "util.h"
#include "web_config.h"
#include "web_serve.h"

/* Clients whose basic auth failed lately: each may be checked again (bcrypt) once a second. */
#define FAIL_SLOTS 64
#define FAIL_NS 1000000000ull
/* Credentials that passed, as salted digests: checked again without bcrypt. */
#define PASSED_SLOTS 16
#define WATCH_MS 200

/* Who a connection is: a local user, or a remote address (an IPv6 address's /64). */
struct client {
	bool local;
	uint32_t uid;
	uint8_t addr[16];
};

struct conn {
	struct MHD_Connection *c; /* NULL: a free slot */
	int fd;
	struct client who;
	uint64_t deadline; /* CLOCK_MONOTONIC ns: the end of the request under way */
	bool cut;
};

struct web_server {
	struct MHD_Daemon *d;
	int listen_fd;
	web_handler handler;
	void *arg;
	struct web_config *cfg;
	/* conns and stopping: libmicrohttpd's thread and the watchdog */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping, watching;
	pthread_t watchdog;
	struct conn conns[WEB_MAX_CONNS];
	/* libmicrohttpd's thread only */
	struct {
		struct client who;
		uint64_t at;
	} fails[FAIL_SLOTS];
	uint8_t passed[PASSED_SLOTS][SHA256_SIZE];
	unsigned nr_passed;
	uint8_t salt[16];
	/* what libmicrohttpd said while starting: why it would not */
	volatile bool starting;
	char start_err[256];
	/* for -v at the end */
	uint64_t requests, refused, cut, auth_failed, throttled;
};

int serve_addr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len, char *err, size_t errlen)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	const char *colon = strrchr(s, ':'), *port_s = colon ? colon + 1 : s;
	char host[INET6_ADDRSTRLEN + 2] = "";
	uint64_t port;
	size_t hl = colon ? (size_t)(colon - s) : 0;

	memset(ss, 0, sizeof(*ss));
	if (parse_u64(port_s, &port, 0, 65535) || hl >= sizeof(host))
		goto bad;
	memcpy(host, s, hl);
	host[hl] = 0;
	if (host[0] == '[') {
		if (hl < 2 || host[hl - 1] != ']')
			goto bad;
		host[hl - 1] = 0;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		if (inet_pton(AF_INET6, host + 1, &in6->sin6_addr) != 1)
			goto bad;
		*len = sizeof(*in6);
		return 0;
	}
	in4->sin_family = AF_INET;
	in4->sin_port = htons(port);
	/* No address: loopback, so that counters of the whole host are not published by accident. */
	if (inet_pton(AF_INET, host[0] ? host : "127.0.0.1", &in4->sin_addr) != 1)
		goto bad;
	*len = sizeof(*in4);
	return 0;
bad:
	return set_errorf(err, errlen, -EINVAL, "--serve '%s' is not PORT, ADDR:PORT or [ADDR6]:PORT", s);
}

/*
 * libmicrohttpd, opened when a server is first wanted rather than linked:
 * with GnuTLS and what GnuTLS needs it was 10 of the 24 libraries every
 * spanperf command loaded and relocated before main (an empty program
 * linked as spanperf was took 4.3 ms of CPU to start, 2.0 without it),
 * where only --serve uses it.  0, or -ENOENT (said in err) without it.
 */
static struct {
	__typeof__(&MHD_is_feature_supported) is_feature_supported;
	__typeof__(&MHD_get_connection_info) get_connection_info;
	__typeof__(&MHD_basic_auth_get_username_password) basic_auth_get_username_password;
	__typeof__(&MHD_free) free;
	__typeof__(&MHD_create_response_from_buffer) create_response_from_buffer;
	__typeof__(&MHD_add_response_header) add_response_header;
	__typeof__(&MHD_queue_basic_auth_fail_response) queue_basic_auth_fail_response;
	__typeof__(&MHD_queue_response) queue_response;
	__typeof__(&MHD_destroy_response) destroy_response;
	__typeof__(&MHD_start_daemon) start_daemon;
	__typeof__(&MHD_quiesce_daemon) quiesce_daemon;
	__typeof__(&MHD_stop_daemon) stop_daemon;
} mh;
static bool mh_ok;
static pthread_once_t mh_once = PTHREAD_ONCE_INIT;

static void mh_init(void)
{
	void *h = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return;
#define MH_SYM(f) (*(void **)&mh.f = dlsym(h, "MHD_" #f))
	mh_ok = MH_SYM(is_feature_supported) && MH_SYM(get_connection_info) && MH_SYM(basic_auth_get_username_password) &&
		MH_SYM(free) && MH_SYM(create_response_from_buffer) && MH_SYM(add_response_header) &&
		MH_SYM(queue_basic_auth_fail_response) && MH_SYM(queue_response) && MH_SYM(destroy_response) &&
		MH_SYM(start_daemon) && MH_SYM(quiesce_daemon) && MH_SYM(stop_daemon);
#undef MH_SYM
}

static int mh_load(char *err, size_t errlen)
{
	pthread_once(&mh_once, mh_init);
	return mh_ok ? 0
		     : set_errorf(err, errlen, -ENOENT,
				  "--serve needs libmicrohttpd (libmicrohttpd.so.12), which cannot be loaded here");
}

int web_config_check(const char *path, char *err, size_t errlen)
{
	struct web_config *c = NULL;
	int e = mh_load(err, errlen) ?: web_config__load(&c, path, err, errlen);

	if (!e && c->cert_pem && mh.is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
		e = set_errorf(err, errlen, -EOPNOTSUPP,
			       "--web-config '%s' asks for TLS, and this libmicrohttpd was built without it", path);
	web_config__free(c);
	return e;
}

/* An address as 16 bytes: IPv4 as ::ffff:a.b.c.d. */
static void addr16(const struct sockaddr_storage *ss, uint8_t out[16])
{
	memset(out, 0, 16);
	if (ss->ss_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	} else if (ss->ss_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	}
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
					 : ((const struct sockaddr_in *)ss)->sin_port;
}

/*
 * The owner of the socket at the other end of a connection, if it is on
 * this host (in our network namespace): sock_diag's lookup by the four
 * values, from that socket's side.  0, or -errno (a remote peer: -ENOENT).
 */
static int peer_uid(const struct sockaddr_storage *peer, const struct sockaddr_storage *local, uint32_t *uid)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} q = {};
	union {
		struct nlmsghdr h;
		char buf[512];
	} a;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct timeval tv = { 0, 200000 };
	uint8_t p[16], l[16];
	bool v4;
	ssize_t n;
	int fd, e = -ENOENT;

	addr16(peer, p);
	addr16(local, l);
	/* A v4 client of a v6 socket is a v4 socket itself. */
	v4 = !memcmp(p, mapped, 12) && !memcmp(l, mapped, 12);
	q.h.nlmsg_len = sizeof(q);
	q.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.h.nlmsg_flags = NLM_F_REQUEST;
	q.r.sdiag_family = v4 ? AF_INET : AF_INET6;
	q.r.sdiag_protocol = IPPROTO_TCP;
	q.r.idiag_states = ~0u;
	q.r.id.idiag_sport = port_of(peer);
	q.r.id.idiag_dport = port_of(local);
	memcpy(q.r.id.idiag_src, v4 ? p + 12 : p, v4 ? 4 : 16);
	memcpy(q.r.id.idiag_dst, v4 ? l + 12 : l, v4 ? 4 : 16);
	q.r.id.idiag_cookie[0] = q.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(fd, &q, sizeof(q), 0, (struct sockaddr *)&kernel, sizeof(kernel)) != sizeof(q)) {
		e = -errno;
		goto cleanup;
	}
	n = recv(fd, &a, sizeof(a), 0);
	if (n >= (ssize_t)NLMSG_LENGTH(sizeof(struct inet_diag_msg)) && a.h.nlmsg_type == SOCK_DIAG_BY_FAMILY &&
	    a.h.nlmsg_len <= (size_t)n) {
		*uid = ((const struct inet_diag_msg *)NLMSG_DATA(&a.h))->idiag_uid;
		e = 0;
	}
cleanup:
	close(fd);
	return e;
}

static void identify(int fd, struct client *who)
{
	struct sockaddr_storage peer, local;
	socklen_t pl = sizeof(peer), ll = sizeof(local);

	memset(who, 0, sizeof(*who)); /* unknown: one client for all such */
	if (fd < 0 || getpeername(fd, (struct sockaddr *)&peer, &pl) || getsockname(fd, (struct sockaddr *)&local, &ll))
		return;
	if (!peer_uid(&peer, &local, &who->uid)) {
		who->local = true;
		return;
	}
	addr16(&peer, who->addr);
	/* An IPv6 host has a /64 to pick addresses from. */
	if (peer.ss_family == AF_INET6 && !IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&peer)->sin6_addr))
		memset(who->addr + 8, 0, 8);
}

static bool same_client(const struct client *a, const struct client *b)
{
	return a->local == b->local && (a->local ? a->uid == b->uid : !memcmp(a->addr, b->addr, 16));
}

/* A new connection gets a slot, unless its client holds WEB_PER_CLIENT already: it is cut at once. */
static void on_connection(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_ConnectionNotificationCode code)
{
	struct web_server *s = cls;
	struct conn *k = *ctx, *slot = NULL;
	const union MHD_ConnectionInfo *ci;
	struct client who;
	int fd, same = 0;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (k) {
			pthread_mutex_lock(&s->lock);
			k->c = NULL;
			k->fd = -1;
			pthread_mutex_unlock(&s->lock);
		}
		return;
	}
	ci = mh.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	fd = ci ? ci->connect_fd : -1;
	identify(fd, &who);
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < WEB_MAX_CONNS; i++) {
		if (!s->conns[i].c)
			slot = slot ? slot : &s->conns[i];
		else
			same += same_client(&s->conns[i].who, &who);
	}
	if (slot && same < WEB_PER_CLIENT && fd >= 0)
		*slot = (struct conn){ c, fd, who, now_ns(CLOCK_MONOTONIC) + WEB_REQUEST_S * 1000000000ull, false };
	else
		slot = NULL;
	*ctx = slot;
	if (!slot) {
		s->refused++;
		if (fd >= 0)
			shutdown(fd, SHUT_RDWR); /* libmicrohttpd reads the end and closes it */
	}
	pthread_mutex_unlock(&s->lock);
}

static struct conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = mh.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* An answer sent: the next request on the connection has its own deadline. */
static void on_completed(void *cls, struct MHD_Connection *c, void **req, enum MHD_RequestTerminationCode toe)
{
	struct web_server *s = cls;
	struct conn *k = conn_of(c);

	(void)req;
	if (!k || toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		return;
	pthread_mutex_lock(&s->lock);
	k->deadline = now_ns(CLOCK_MONOTONIC) + WEB_REQUEST_S * 1000000000ull;
	pthread_mutex_unlock(&s->lock);
}

static void *watch(void *arg)
{
	struct web_server *s = arg;

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		struct timespec ts;

		for (int i = 0; i < WEB_MAX_CONNS; i++) {
			struct conn *k = &s->conns[i];

			if (k->c && !k->cut && now >= k->deadline) {
				shutdown(k->fd, SHUT_RDWR);
				k->cut = true;
				s->cut++;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += WATCH_MS * 1000000l;
		ts.tv_sec += ts.tv_nsec / 1000000000l;
		ts.tv_nsec %= 1000000000l;
		pthread_cond_timedwait(&s->wake, &s->lock, &ts);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static void passed_key(const struct web_server *s, const char *user, const char *pass, uint8_t out[SHA256_SIZE])
{
	struct sha256 h;

	sha256_init(&h);
	sha256_update(&h, s->salt, sizeof(s->salt));
	sha256_update(&h, user, strlen(user) + 1);
	sha256_update(&h, pass, strlen(pass));
	sha256_final(&h, out);
}

/* Whether who failed a check in the last second: it is not checked (bcrypt) again so soon. */
static bool throttled(struct web_server *s, const struct client *who, uint64_t now, bool failed)
{
	int oldest = 0;

	for (int i = 0; i < FAIL_SLOTS; i++) {
		if (s->fails[i].at && same_client(&s->fails[i].who, who)) {
			if (failed)
				s->fails[i].at = now;
			return !failed && now - s->fails[i].at < FAIL_NS;
		}
		if (s->fails[i].at < s->fails[oldest].at)
			oldest = i;
	}
	if (failed) {
		s->fails[oldest].who = *who;
		s->fails[oldest].at = now;
	}
	return false;
}

/* Basic auth, where the config names users: a cached pass, else bcrypt, unless the client failed just now. */
static bool authorized(struct web_server *s, struct MHD_Connection *c)
{
	const struct conn *k = conn_of(c);
	struct client unknown = {};
	const struct client *who = k ? &k->who : &unknown;
	char *pass = NULL, *user = mh.basic_auth_get_username_password(c, &pass);
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	uint8_t key[SHA256_SIZE];
	bool ok = false;

	if (!user || !pass)
		goto cleanup;
	passed_key(s, user, pass, key);
	for (unsigned i = 0; i < SP_MIN(s->nr_passed, (unsigned)PASSED_SLOTS) && !ok; i++)
		ok = !memcmp(s->passed[i], key, SHA256_SIZE);
	if (ok)
		goto cleanup;
	if (throttled(s, who, now, false)) {
		s->throttled++;
		goto cleanup;
	}
	ok = web_config__check(s->cfg, user, pass);
	if (ok) {
		memcpy(s->passed[s->nr_passed++ % PASSED_SLOTS], key, SHA256_SIZE);
	} else {
		s->auth_failed++;
		throttled(s, who, now, true);
	}
cleanup:
	if (pass) {
		explicit_bzero(pass, strlen(pass));
		mh.free(pass);
	}
	if (user)
		mh.free(user);
	return ok;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text, bool auth)
{
	struct MHD_Response *r = mh.create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	mh.add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
	ret = auth ? mh.queue_basic_auth_fail_response(c, "spanperf", r) : mh.queue_response(c, status, r);
	mh.destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **req)
{
	struct web_server *s = cls;
	struct web_reply r = { .status = MHD_HTTP_OK, .content_type = "text/plain; charset=utf-8" };
	struct MHD_Response *resp;
	enum MHD_Result ret;
	int e;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)req;
	s->requests++;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n", false);
	if (s->cfg && s->cfg->nr_users && !authorized(s, c))
		return reply_text(c, MHD_HTTP_UNAUTHORIZED, "unauthorized\n", true);
	e = s->handler(s->arg, url, &r);
	if (!e && r.body.err)
		e = r.body.err;
	if (e) {
		sbuf_free(&r.body);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot make the page\n", false);
	}
	/* MHD frees the page once sent (or once the connection is dropped). */
	resp = mh.create_response_from_buffer(r.body.len, r.body.p, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		sbuf_free(&r.body);
		return MHD_NO;
	}
	mh.add_response_header(resp, "Content-Type", r.content_type);
	ret = mh.queue_response(c, r.status, resp);
	mh.destroy_response(resp);
	return ret;
}

/* libmicrohttpd's messages: why it would not start, kept for the one sentence; then nothing. */
static void on_log(void *cls, const char *fmt, va_list ap)
{
	struct web_server *s = cls;
	size_t n;

	if (!s->starting || s->start_err[0])
		return;
	vsnprintf(s->start_err, sizeof(s->start_err), fmt, ap);
	n = strlen(s->start_err);
	while (n && (s->start_err[n - 1] == '\n' || s->start_err[n - 1] == '.'))
		s->start_err[--n] = 0;
}

static int listen_on(const struct web_opts *o, int *fd_out)
{
	struct sockaddr_storage ss;
	char err[256];
	socklen_t len;
	int fd, one = 1, e = serve_addr_parse(o->addr, &ss, &len, err, sizeof(err));

	if (e) {
		pr_err("%s", err);
		return e;
	}
	/*
	 * Our own socket: a port in use is said as such, before anything is
	 * counted.  The longest queue the kernel allows: connections cut at
	 * once (over a client's limit) come back at once, and while they
	 * fill a short queue, a scraper's SYN is dropped and retried a
	 * second or three later.
	 */
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, len) || listen(fd, SOMAXCONN)) {
		e = -errno;
		pr_err("cannot listen on %s '%s': %s", o->flag, o->addr, strerror(-e));
		if (fd >= 0)
			close(fd);
		return e;
	}
	*fd_out = fd;
	return 0;
}

int web_server__start(struct web_server **out, const struct web_opts *o)
{
	struct web_server *s;
	pthread_condattr_t ca;
	struct MHD_OptionItem opts[12];
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
	char err[512];
	int n = 0, e;

	*out = NULL;
	e = mh_load(err, sizeof(err));
	if (e) {
		pr_err("%s", err);
		return e;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->listen_fd = -1;
	s->handler = o->handler;
	s->arg = o->arg;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_condattr_destroy(&ca);
	for (int i = 0; i < WEB_MAX_CONNS; i++)
		s->conns[i].fd = -1;
	if (getrandom(s->salt, sizeof(s->salt), 0) != sizeof(s->salt))
		memset(s->salt, 0x5a, sizeof(s->salt)); /* only keys the cache of passes: no secret */
	if (o->config) {
		e = web_config__load(&s->cfg, o->config, err, sizeof(err));
		if (!e && s->cfg->cert_pem && mh.is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
			e = set_errorf(err, sizeof(err), -EOPNOTSUPP,
				       "--web-config '%s' asks for TLS, and this libmicrohttpd was built without it",
				       o->config);
		if (e) {
			pr_err("%s", err);
			goto fail;
		}
	}
	e = listen_on(o, &s->listen_fd);
	if (e)
		goto fail;
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_log, s };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, s->listen_fd, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, WEB_REQUEST_S, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT, WEB_MAX_CONNS, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, s };
	if (s->cfg && s->cfg->cert_pem) {
		flags |= MHD_USE_TLS;
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, s->cfg->cert_pem };
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, s->cfg->key_pem };
		/* TLS 1.2 and up, as Prometheus' exporters by default. */
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
						     s->cfg->tls13 ? "NORMAL:-VERS-ALL:+VERS-TLS1.3"
								   : "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2" };
	}
	opts[n] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	s->starting = true;
	s->d = mh.start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
	s->starting = false;
	if (!s->d) {
		e = -EIO;
		pr_err("cannot serve %s '%s'%s%s%s: %s", o->flag, o->addr, o->config ? " with --web-config '" : "",
		       o->config ? o->config : "", o->config ? "'" : "",
		       s->start_err[0] ? s->start_err : "libmicrohttpd would not start");
		goto fail;
	}
	s->listen_fd = -1; /* libmicrohttpd's now: MHD_quiesce_daemon hands it back */
	e = -pthread_create(&s->watchdog, NULL, watch, s);
	if (e) {
		pr_err("cannot serve %s '%s': no thread for its deadlines: %s", o->flag, o->addr, strerror(-e));
		goto fail;
	}
	s->watching = true;
	*out = s;
	return 0;
fail:
	web_server__free(s);
	return e;
}

void web_server__free(struct web_server *s)
{
	if (!s)
		return;
	if (s->watching) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		pthread_cond_signal(&s->wake);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->watchdog, NULL);
	}
	if (s->d) {
		/* MHD owns the listening socket it was given: quiesce hands it back to close. */
		int fd = mh.quiesce_daemon(s->d);

		mh.stop_daemon(s->d);
		if (fd >= 0)
			close(fd);
	}
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->requests || s->refused)
		pr_debug("served %llu requests; refused %llu connections over %d of one client; cut %llu at the %d s deadline; "
			 "%llu failed basic auth, %llu more not checked within a second of a failure",
			 (unsigned long long)s->requests, (unsigned long long)s->refused, WEB_PER_CLIENT,
			 (unsigned long long)s->cut, WEB_REQUEST_S, (unsigned long long)s->auth_failed,
			 (unsigned long long)s->throttled);
	web_config__free(s->cfg);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
