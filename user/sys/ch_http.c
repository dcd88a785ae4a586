// SPDX-License-Identifier: GPL-2.0
/* ClickHouse over HTTP with libcurl (ch_http.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include <dlfcn.h>
#define CURL_DISABLE_TYPECHECK /* curl_easy_setopt called through a pointer, not the header's macro */
#include <curl/curl.h>
#include <zlib.h>

#include "ch_http.h"
#include "log.h"

struct ch_http {
	char *url; /* ends in '/' */
	char *user, *password;
	char *ca_file; /* https: the CA to trust, or NULL: the system's */
	CURL *curl;
	long timeout_ms;
	_Atomic uint64_t deadline_ns; /* CLOCK_MONOTONIC: a request still running then is cut (0: none) */
};

_Static_assert(EPROTO == 71, "ch_answered's errno");

/*
 * libcurl, opened when the first client is made rather than linked: it and
 * libdebuginfod brought 22 of the 47 libraries every spanperf command
 * loaded and relocated before main (its TLS, Kerberos, LDAP; an empty
 * program linked as spanperf was took 8.2 ms of CPU to start, 3.5 without
 * the two), where only the agent and report --clickhouse use it.
 */
static struct {
	__typeof__(&curl_global_init) global_init;
	__typeof__(&curl_easy_init) easy_init;
	__typeof__(&curl_easy_cleanup) easy_cleanup;
	__typeof__(&curl_easy_reset) easy_reset;
	__typeof__(&curl_easy_setopt) easy_setopt;
	__typeof__(&curl_easy_perform) easy_perform;
	__typeof__(&curl_easy_getinfo) easy_getinfo;
	__typeof__(&curl_easy_strerror) easy_strerror;
	__typeof__(&curl_easy_escape) easy_escape;
	__typeof__(&curl_free) free;
	__typeof__(&curl_slist_append) slist_append;
	__typeof__(&curl_slist_free_all) slist_free_all;
} lc;
static bool lc_ok;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init(void)
{
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return;
#define LC_SYM(f, name) (*(void **)&lc.f = dlsym(h, name))
	lc_ok = LC_SYM(global_init, "curl_global_init") && LC_SYM(easy_init, "curl_easy_init") &&
		LC_SYM(easy_cleanup, "curl_easy_cleanup") && LC_SYM(easy_reset, "curl_easy_reset") &&
		LC_SYM(easy_setopt, "curl_easy_setopt") && LC_SYM(easy_perform, "curl_easy_perform") &&
		LC_SYM(easy_getinfo, "curl_easy_getinfo") && LC_SYM(easy_strerror, "curl_easy_strerror") &&
		LC_SYM(easy_escape, "curl_easy_escape") && LC_SYM(free, "curl_free") &&
		LC_SYM(slist_append, "curl_slist_append") && LC_SYM(slist_free_all, "curl_slist_free_all");
#undef LC_SYM
	if (lc_ok)
		lc.global_init(CURL_GLOBAL_DEFAULT);
}

/* The password file's first line (its line end left out). */
static int read_password(const char *path, char **out, char *err, size_t errlen)
{
	char buf[1024];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return set_errorf(err, errlen, -EINVAL, "--clickhouse-password-file '%s' cannot be read: %s", path,
				  strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	buf[strcspn(buf, "\r\n")] = 0;
	*out = strdup(buf);
	return *out ? 0 : -ENOMEM;
}

int ch_http__open(struct ch_http **out, const struct ch_http_opts *o, char *err, size_t errlen)
{
	const char *u = o->url, *scheme_end = strstr(u, "://"), *host, *slash;
	const char *user = getenv("CLICKHOUSE_USER"), *pw = getenv("CLICKHOUSE_PASSWORD");
	struct ch_http *c;
	int e = 0;

	*out = NULL;
	if (!scheme_end || (strncmp(u, "http://", 7) && strncmp(u, "https://", 8)))
		return set_errorf(err, errlen, -EINVAL, "--clickhouse '%s' is not an http:// or https:// URL", u);
	host = scheme_end + 3;
	slash = strchr(host, '/');
	if (memchr(host, '@', slash ? (size_t)(slash - host) : strlen(host)))
		return set_errorf(err, errlen, -EINVAL,
				  "--clickhouse URL carries a user or password; give them in CLICKHOUSE_USER and "
				  "CLICKHOUSE_PASSWORD or --clickhouse-password-file, never on the command line");
	if (!*host || *host == '/' || strpbrk(u, "?#"))
		return set_errorf(err, errlen, -EINVAL, "--clickhouse '%s' is not a server's URL (http://HOST:PORT)", u);
	pthread_once(&curl_once, curl_init);
	if (!lc_ok)
		return set_errorf(err, errlen, -ENOENT,
				  "--clickhouse needs libcurl (libcurl.so.4), which cannot be loaded here");
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->timeout_ms = o->timeout_ms ? o->timeout_ms : 10000;
	if (asprintf(&c->url, "%s%s", u, u[strlen(u) - 1] == '/' ? "" : "/") < 0)
		c->url = NULL;
	c->user = strdup(user && *user ? user : "default");
	if (o->ca_file && access(o->ca_file, R_OK))
		e = set_errorf(err, errlen, -errno, "--clickhouse-ca '%s': %s", o->ca_file, strerror(errno));
	else if (o->ca_file && !(c->ca_file = strdup(o->ca_file)))
		e = -ENOMEM;
	if (!e && o->password_file)
		e = read_password(o->password_file, &c->password, err, errlen);
	else if (!e)
		c->password = strdup(pw ? pw : "");
	c->curl = lc.easy_init();
	if (!e && (!c->url || !c->user || !c->password || !c->curl))
		e = -ENOMEM;
	if (e) {
		ch_http__free(c);
		return e;
	}
	*out = c;
	return 0;
}

void ch_http__free(struct ch_http *c)
{
	if (!c)
		return;
	if (c->curl)
		lc.easy_cleanup(c->curl);
	if (c->password)
		explicit_bzero(c->password, strlen(c->password));
	free(c->password);
	free(c->user);
	free(c->url);
	free(c->ca_file);
	free(c);
}

const char *ch_http__url(const struct ch_http *c)
{
	return c->url;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void ch_http__set_timeout(struct ch_http *c, long timeout_ms)
{
	c->timeout_ms = timeout_ms;
	c->deadline_ns = mono_ns() + timeout_ms * 1000000ull;
}

/* libcurl's progress callback: nonzero cuts the request (a stop's deadline passed). */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	struct ch_http *c = arg;
	uint64_t d = c->deadline_ns;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return d && mono_ns() > d;
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct sbuf *b = arg;

	return sbuf_add(b, p, size * n) ? 0 : size * n;
}

/* An error answer's first line, printable, for one sentence. */
static void say_answer(const struct sbuf *ans, long status, const char *url, char *err, size_t errlen)
{
	char line[200];
	size_t n = 0;

	for (size_t i = 0; i < ans->len && ans->p[i] != '\n' && n < sizeof(line) - 1; i++)
		line[n++] = (unsigned char)ans->p[i] >= 0x20 && (unsigned char)ans->p[i] < 0x7f ? ans->p[i] : '?';
	line[n] = 0;
	set_errorf(err, errlen, -EPROTO, "ClickHouse at %s answered %ld: %s", url, status, n ? line : "(no text)");
}

static int post(struct ch_http *c, const char *query_in_url, const void *body, size_t n, bool gzipped,
		struct sbuf *out, char *err, size_t errlen)
{
	struct sbuf ans = {}, url = {};
	struct curl_slist *hdr = NULL;
	char *q = NULL;
	long status = 0;
	CURLcode r;
	int e = 0;

	sbuf_printf(&url, "%s", c->url);
	if (query_in_url) {
		q = lc.easy_escape(c->curl, query_in_url, 0);
		sbuf_printf(&url, "?query=%s", q ? q : "");
	}
	sbuf_add(&url, "", 1);
	if (url.err || (query_in_url && !q)) {
		e = -ENOMEM;
		goto cleanup;
	}
	if (gzipped)
		hdr = lc.slist_append(hdr, "Content-Encoding: gzip");
	hdr = lc.slist_append(hdr, "Content-Type: application/octet-stream");
	hdr = lc.slist_append(hdr, "Expect:");
	lc.easy_reset(c->curl);
	lc.easy_setopt(c->curl, CURLOPT_URL, url.p);
	lc.easy_setopt(c->curl, CURLOPT_POST, 1L);
	lc.easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
	lc.easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
	lc.easy_setopt(c->curl, CURLOPT_HTTPHEADER, hdr);
	lc.easy_setopt(c->curl, CURLOPT_USERNAME, c->user);
	lc.easy_setopt(c->curl, CURLOPT_PASSWORD, c->password);
	lc.easy_setopt(c->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
	lc.easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	lc.easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms < 3000 ? c->timeout_ms : 3000L);
	lc.easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	lc.easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	lc.easy_setopt(c->curl, CURLOPT_WRITEDATA, &ans);
	lc.easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
	lc.easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	lc.easy_setopt(c->curl, CURLOPT_XFERINFODATA, c);
	/* Never where the server redirects: the password goes to the URL given alone. */
	lc.easy_setopt(c->curl, CURLOPT_FOLLOWLOCATION, 0L);
	/* https: the server's certificate checked, always (its name too); by --clickhouse-ca's CA, or the system's. */
	lc.easy_setopt(c->curl, CURLOPT_SSL_VERIFYPEER, 1L);
	lc.easy_setopt(c->curl, CURLOPT_SSL_VERIFYHOST, 2L);
	if (c->ca_file)
		lc.easy_setopt(c->curl, CURLOPT_CAINFO, c->ca_file);
	lc.easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	r = lc.easy_perform(c->curl);
	lc.easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	if (r == CURLE_OK && status == 200) {
		if (out && sbuf_add(out, ans.p, ans.len))
			e = -ENOMEM;
	} else if (r == CURLE_OK) {
		say_answer(&ans, status, c->url, err, errlen);
		e = -EPROTO;
	} else {
		e = r == CURLE_OPERATION_TIMEDOUT || r == CURLE_ABORTED_BY_CALLBACK ? -ETIMEDOUT
		    : r == CURLE_COULDNT_CONNECT	? -ECONNREFUSED
		    : r == CURLE_OUT_OF_MEMORY		? -ENOMEM
							: -EIO;
		if (r == CURLE_PEER_FAILED_VERIFICATION)
			set_errorf(err, errlen, -EACCES, "ClickHouse at %s: its certificate is not one %s trusts for that name: "
				   "refused", c->url, c->ca_file ? c->ca_file : "the system's CA store");
		else
			set_errorf(err, errlen, e, "ClickHouse at %s: %s", c->url, lc.easy_strerror(r));
		if (r == CURLE_PEER_FAILED_VERIFICATION)
			e = -EACCES;
	}
cleanup:
	lc.free(q);
	lc.slist_free_all(hdr);
	sbuf_free(&ans);
	sbuf_free(&url);
	return e;
}

int ch_query(struct ch_http *c, const char *sql, struct sbuf *out, char *err, size_t errlen)
{
	return post(c, NULL, sql, strlen(sql), false, out, err, errlen);
}

int ch_gzip(const void *body, size_t n, struct sbuf *out)
{
	z_stream z = {};
	size_t cap = compressBound(n) + 64;
	int r;

	if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	if (sbuf_zero(out, cap)) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	out->len -= cap;
	z.next_in = (Bytef *)body;
	z.avail_in = n;
	z.next_out = (Bytef *)out->p + out->len;
	z.avail_out = cap;
	r = deflate(&z, Z_FINISH);
	out->len += cap - z.avail_out;
	deflateEnd(&z);
	return r == Z_STREAM_END ? 0 : -ENOMEM;
}

int ch_insert(struct ch_http *c, const char *sql, const void *gz, size_t n, char *err, size_t errlen)
{
	return post(c, sql, gz, n, true, NULL, err, errlen);
}
