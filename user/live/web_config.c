// SPDX-License-Identifier: GPL-2.0
/*
 * The web config file, read with libyaml's document loader (aliases are
 * node references there, never copies, and the walk below is two levels
 * deep), and bcrypt checks with libxcrypt's crypt_r.
 */
#include <crypt.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "fileio.h"
#include "log.h"
#include "web_config.h"

/* A certificate chain or key: far less than this. */
#define PEM_MAX (1u << 20)

struct load {
	yaml_document_t doc;
	const char *path;
	char dir[PATH_MAX];
	char *err;
	size_t errlen;
};

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* No value (`key:` or `~`): as if the key were not there. */
static bool empty(const yaml_node_t *n)
{
	const char *s = scalar(n);

	return !n || (s && (!*s || !strcmp(s, "~") || !strcmp(s, "null")));
}

static int bad(struct load *l, const char *fmt, const char *what)
{
	char msg[256];

	snprintf(msg, sizeof(msg), fmt, what);
	return set_errorf(l->err, l->errlen, -EINVAL, "--web-config '%s': %s", l->path, msg);
}

/* A file the config names, relative to its directory, read whole. */
static int read_named(struct load *l, const char *key, const char *name, char **out)
{
	char path[PATH_MAX];
	size_t len;
	int e;

	if ((size_t)snprintf(path, sizeof(path), "%s%s", name[0] == '/' ? "" : l->dir, name) >= sizeof(path))
		return bad(l, "%s is too long a path", key);
	e = read_file_all(path, out, &len);
	if (e)
		return set_errorf(l->err, l->errlen, e, "--web-config '%s': cannot read %s '%s': %s", l->path, key, path,
				  e == -EINVAL ? "not a regular file" : strerror(-e));
	if (len > PEM_MAX || !strstr(*out, "-----BEGIN "))
		return set_errorf(l->err, l->errlen, -EINVAL, "--web-config '%s': %s '%s' is not PEM", l->path, key,
				  path);
	return 0;
}

static int tls_config(struct load *l, const yaml_node_t *m, struct web_config *c)
{
	const char *cert = NULL, *key = NULL;
	int e;

	if (m->type != YAML_MAPPING_NODE)
		return bad(l, "%s is not a mapping", "tls_server_config");
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(&l->doc, p->key));
		const yaml_node_t *vn = yaml_document_get_node(&l->doc, p->value);
		const char *v = scalar(vn);

		if (!k)
			return bad(l, "%s has a key that is not a string", "tls_server_config");
		if (empty(vn))
			continue;
		if (!v)
			return bad(l, "tls_server_config.%s is not a string", k);
		if (!strcmp(k, "cert_file")) {
			cert = v;
		} else if (!strcmp(k, "key_file")) {
			key = v;
		} else if (!strcmp(k, "min_version")) {
			if (strcmp(v, "TLS12") && strcmp(v, "TLS13"))
				return bad(l, "tls_server_config.min_version is %s, not TLS12 or TLS13", v);
			c->tls13 = !strcmp(v, "TLS13");
		} else if (!strcmp(k, "client_auth_type") && !strcmp(v, "NoClientCert")) {
			continue; /* the default, and what spanperf does */
		} else {
			return bad(l, "tls_server_config.%s is not supported (cert_file, key_file and min_version are)",
				   k);
		}
	}
	if (!cert && !key)
		return 0;
	if (!cert || !key)
		return bad(l, "tls_server_config needs %s too", cert ? "key_file" : "cert_file");
	e = read_named(l, "cert_file", cert, &c->cert_pem);
	return e ?: read_named(l, "key_file", key, &c->key_pem);
}

static int users(struct load *l, const yaml_node_t *m, struct web_config *c)
{
	size_t n;

	if (m->type != YAML_MAPPING_NODE)
		return bad(l, "%s is not a mapping of users to bcrypt hashes", "basic_auth_users");
	n = m->data.mapping.pairs.top - m->data.mapping.pairs.start;
	c->users = calloc(n ? n : 1, sizeof(*c->users));
	if (!c->users)
		return -ENOMEM;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(&l->doc, p->key));
		const char *v = scalar(yaml_document_get_node(&l->doc, p->value));
		struct web_user *u = &c->users[c->nr_users];

		if (!k || !*k || strchr(k, ':'))
			return bad(l, "basic_auth_users has a user name that is %s", "empty, not a string, or holds ':'");
		/* bcrypt only, as Prometheus' exporters: $2a$, $2b$ or $2y$, which crypt(3) checks. */
		if (!v || strncmp(v, "$2", 2) || !strchr("aby", v[2]) || v[3] != '$' || crypt_checksalt(v) != CRYPT_SALT_OK)
			return bad(l, "basic_auth_users.%s is not a bcrypt hash ($2y$...)", k);
		u->name = strdup(k);
		u->hash = strdup(v);
		if (!u->name || !u->hash)
			return -ENOMEM;
		c->nr_users++;
	}
	return 0;
}

static int walk(struct load *l, struct web_config *c)
{
	yaml_node_t *root = yaml_document_get_root_node(&l->doc);

	if (!root || empty(root))
		return 0; /* an empty file: neither TLS nor auth */
	if (root->type != YAML_MAPPING_NODE)
		return bad(l, "%s", "its top is not a mapping");
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(&l->doc, p->key));
		const yaml_node_t *v = yaml_document_get_node(&l->doc, p->value);
		int e = 0;

		if (!k)
			return bad(l, "%s", "a key is not a string");
		if (empty(v))
			continue;
		if (!strcmp(k, "tls_server_config"))
			e = tls_config(l, v, c);
		else if (!strcmp(k, "basic_auth_users"))
			e = users(l, v, c);
		else
			return bad(l, "%s is not supported (tls_server_config and basic_auth_users are)", k);
		if (e)
			return e;
	}
	return 0;
}

int web_config__load(struct web_config **out, const char *path, char *err, size_t errlen)
{
	struct load l = { .path = path, .err = err, .errlen = errlen };
	struct web_config *c = calloc(1, sizeof(*c));
	const char *slash = strrchr(path, '/');
	yaml_parser_t parser;
	char *text = NULL;
	size_t len;
	bool doc = false;
	int e;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	snprintf(l.dir, sizeof(l.dir), "%.*s", slash ? (int)(slash - path + 1) : 0, path);
	e = read_file_all(path, &text, &len);
	if (e) {
		set_errorf(err, errlen, e, "cannot read --web-config '%s': %s", path,
			   e == -EINVAL ? "not a regular file" : strerror(-e));
		goto cleanup;
	}
	if (!yaml_parser_initialize(&parser)) {
		e = -ENOMEM;
		goto cleanup;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &l.doc)) {
		e = set_errorf(err, errlen, -EINVAL, "--web-config '%s' is not YAML: %s at line %zu", path,
			       parser.problem ? parser.problem : "malformed", parser.problem_mark.line + 1);
	} else {
		doc = true;
		e = walk(&l, c);
	}
	yaml_parser_delete(&parser);
cleanup:
	if (doc)
		yaml_document_delete(&l.doc);
	free(text);
	if (e == -ENOMEM)
		set_errorf(err, errlen, e, "out of memory reading --web-config '%s'", path);
	if (e) {
		web_config__free(c);
		return e;
	}
	*out = c;
	return 0;
}

void web_config__free(struct web_config *c)
{
	if (!c)
		return;
	free(c->cert_pem);
	if (c->key_pem) {
		/* A private key: not left in freed memory. */
		explicit_bzero(c->key_pem, strlen(c->key_pem));
		free(c->key_pem);
	}
	for (int i = 0; i < c->nr_users; i++) {
		free(c->users[i].name);
		free(c->users[i].hash);
	}
	free(c->users);
	free(c);
}

bool web_config__check(const struct web_config *c, const char *user, const char *pass)
{
	const struct web_user *u = NULL;
	struct crypt_data *cd;
	const char *got;
	unsigned char diff = 0;
	size_t n;

	if (!c->nr_users)
		return false;
	for (int i = 0; i < c->nr_users && !u; i++)
		if (!strcmp(c->users[i].name, user))
			u = &c->users[i];
	cd = calloc(1, sizeof(*cd));
	if (!cd)
		return false;
	/* An unknown user is hashed against a known user's hash: the same cost, and no match. */
	got = crypt_r(pass, u ? u->hash : c->users[0].hash, cd);
	n = u && got ? strlen(u->hash) : 0;
	if (n && strlen(got) == n)
		for (size_t i = 0; i < n; i++)
			diff |= (unsigned char)(got[i] ^ u->hash[i]);
	else
		diff = 1;
	explicit_bzero(cd, sizeof(*cd));
	free(cd);
	return !diff;
}
