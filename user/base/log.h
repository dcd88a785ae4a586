/* SPDX-License-Identifier: GPL-2.0 */
/* Messages to stderr, prefixed by the command's name, and parsers' one-sentence errors. */
#ifndef SP_LOG_H
#define SP_LOG_H

#include <stddef.h>

/* -1 with -q, 0 by default, 1 and up with -v. */
extern int sp_verbose;
/* The name printed before messages: "spanperf record" and so on. */
extern const char *sp_prog;
/* spanperf's own argv, for the CMDLINE feature. */
extern int sp_argc;
extern char **sp_argv;

void pr_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes one sentence to err (if any) and returns code: for parsers' errors. */
int set_errorf(char *err, size_t len, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
