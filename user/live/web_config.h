/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --web-config FILE: TLS and basic auth for an endpoint (web_serve.h), in
 * the YAML of Prometheus' exporters (node_exporter's --web.config.file):
 *
 *   tls_server_config:
 *     cert_file: server.crt      # PEM; relative to FILE's directory
 *     key_file: server.key
 *     min_version: TLS12         # or TLS13 (optional)
 *   basic_auth_users:
 *     prometheus: $2y$10$...     # bcrypt, as htpasswd -B makes them
 *
 * Every other key is refused by name, not ignored: a setting that tightens
 * access (client_auth_type, say) silently dropped would leave it open.
 */
#ifndef SP_WEB_CONFIG_H
#define SP_WEB_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

struct web_user {
	char *name, *hash;
};

struct web_config {
	char *cert_pem, *key_pem; /* the files' text, or NULL without TLS */
	bool tls13;		  /* min_version: TLS13 */
	struct web_user *users;	  /* basic auth, or none */
	int nr_users;
};

/* Reads and checks FILE and the files it names; 0, or -errno with one sentence naming FILE in err. */
int web_config__load(struct web_config **out, const char *path, char *err, size_t errlen);
/* Accepts NULL. */
void web_config__free(struct web_config *c);
/*
 * Whether pass is user's password, by its bcrypt hash (crypt(3), which
 * costs tens of milliseconds at cost 10: callers cache what passed and
 * throttle what failed).  A user not in the file costs the same, so that
 * timing does not tell which users exist.
 */
bool web_config__check(const struct web_config *c, const char *user, const char *pass);

#endif
