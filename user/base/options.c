// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "options.h"

#define MAX_CPUS 65536
#define MAX_ID 0x3fffffff  /* PID_MAX_LIMIT */
#define MAX_DEFS 64

#define fail(err, len, ...) set_errorf(err, len, -EINVAL, __VA_ARGS__)

/* The flag as errors name it: its letter where it has one, as perf does. */
static const char *flag_name(const struct opt_def *d, char *buf, size_t len)
{
	if (d->letter)
		snprintf(buf, len, "-%c", d->letter);
	else
		snprintf(buf, len, "--%s", d->name);
	return buf;
}

static int set_value(const struct opt_def *d, const char *arg, void *opts, char *err, size_t len)
{
	char *at = (char *)opts + d->off, flag[64];
	uint64_t *u = (uint64_t *)at;

	flag_name(d, flag, sizeof(flag));
	switch (d->type) {
	case OPT_T_NONE:
		return 0;
	case OPT_T_FLAG:
		*(bool *)at = true;
		return 0;
	case OPT_T_SET:
		*(int *)at = (int)d->lo;
		return 0;
	case OPT_T_STR:
		if (!*arg)
			return fail(err, len, "%s %s", flag, d->bad);
		*(const char **)at = arg;
		return 0;
	case OPT_T_ANY_STR:
		*(const char **)at = arg;
		return 0;
	case OPT_T_U64:
	case OPT_T_POW2:
		if (parse_u64(arg, u, d->lo, d->hi) || (d->type == OPT_T_POW2 && (*u & (*u - 1))))
			return fail(err, len, "%s '%s' %s", flag, arg, d->bad);
		return 0;
	case OPT_T_IDS:
	case OPT_T_CPUS:
		int_list_free((struct int_list *)at);
		if (int_list_parse((struct int_list *)at, arg, d->type == OPT_T_CPUS,
				   d->type == OPT_T_CPUS ? MAX_CPUS - 1 : MAX_ID))
			return fail(err, len, "%s '%s' %s", flag, arg, d->bad);
		return 0;
	case OPT_T_SECONDS:
		if (parse_seconds(arg, (double *)at))
			return fail(err, len, "%s '%s' %s", flag, arg, d->bad);
		return 0;
	case OPT_T_VERBOSE:
		*(int *)at = *(int *)at < 0 ? 1 : *(int *)at + 1;
		return 0;
	case OPT_T_QUIET:
		*(int *)at = -1;
		return 0;
	case OPT_T_HELP:
		return OPT_HELP;
	case OPT_T_FN:
	case OPT_T_FN_FLAG:
	case OPT_T_FN_OPTARG:
		return d->fn(arg, opts, err, len);
	}
	return -EINVAL;
}

/* getopt's own messages are off; this names the option the way it was written. */
static int bad_option(const struct opt_def *defs, char *err, size_t len, int argc, char **argv, int opt)
{
	const char *arg = optind - 1 < argc ? argv[optind - 1] : "?";
	bool known = optopt >= 256;

	if (opt == ':')
		return fail(err, len, "option '%s' needs a value", arg);
	/*
	 * optopt is a row's own when a long option was given a value it takes
	 * none of (--all=1): that whole word is named.  Else it is an unknown
	 * letter, perhaps inside a cluster (-gx), named alone.
	 */
	for (int k = 0; !known && optopt && (defs[k].name || defs[k].letter); k++)
		known = defs[k].letter == optopt;
	if (optopt && !known)
		return fail(err, len, "unknown option '-%c'; see --help", optopt);
	return fail(err, len, "unknown option '%s'; see --help", arg);
}

static bool takes_value(const struct opt_def *d)
{
	return d->type != OPT_T_NONE && d->type != OPT_T_FLAG && d->type != OPT_T_SET && d->type != OPT_T_VERBOSE &&
	       d->type != OPT_T_QUIET && d->type != OPT_T_HELP && d->type != OPT_T_FN_FLAG &&
	       d->type != OPT_T_FN_OPTARG;
}

int opts_index(const struct opt_def *defs, const char *name)
{
	for (int i = 0; defs[i].name || defs[i].letter; i++)
		if (defs[i].name && !strcmp(defs[i].name, name))
			return i;
	return -1;
}

/* getopt_long's two spellings of the table; long-only rows get 256 + their index. */
static int getopt_tables(const struct opt_def *defs, struct option *lo, char *so, size_t solen)
{
	size_t k = 0;
	int n, l = 0;

	so[k++] = ':';
	for (n = 0; defs[n].name || defs[n].letter; n++) {
		if (n >= MAX_DEFS || k + 3 >= solen)
			return -E2BIG;
		if (defs[n].name)
			lo[l++] = (struct option){ defs[n].name,
						   defs[n].type == OPT_T_FN_OPTARG ? optional_argument :
						   takes_value(&defs[n])	   ? required_argument :
										     no_argument,
						   NULL, defs[n].letter ? defs[n].letter : 256 + n };
		if (defs[n].letter) {
			so[k++] = defs[n].letter;
			if (takes_value(&defs[n]))
				so[k++] = ':';
		}
	}
	lo[l] = (struct option){};
	so[k] = 0;
	return 0;
}

int opts_parse(const struct opt_def *defs, unsigned flags, int argc, char **argv, void *opts, uint64_t *seen,
	       void (*usage)(FILE *out), char *err, size_t errlen)
{
	struct option lo[MAX_DEFS + 1];
	char so[2 * MAX_DEFS + 3];
	int c, r = getopt_tables(defs, lo, so + 1, sizeof(so) - 1);
	const char *optstring = so + 1;

	if (r)
		return fail(err, errlen, "too many options in one table");
	/* '+': stop at the first non-option, which starts CMD (as perf does), or is refused. */
	if (flags & (OPTS_STOP_AT_ARG | OPTS_NO_ARGS)) {
		so[0] = '+';
		optstring = so;
	}
	*seen = 0;
	optind = 0; /* glibc: re-initialise, so the parser can run more than once */
	opterr = 0;
	while ((c = getopt_long(argc, argv, optstring, lo, NULL)) != -1) {
		int i = c >= 256 ? c - 256 : -1;

		for (int k = 0; i < 0 && (defs[k].name || defs[k].letter); k++)
			if (defs[k].letter == c)
				i = k;
		if (i < 0)
			return bad_option(defs, err, errlen, argc, argv, c);
		r = set_value(&defs[i], optarg, opts, err, errlen);
		if (r == OPT_HELP)
			usage(stdout);
		if (r)
			return r;
		*seen |= 1ull << i;
	}
	if ((flags & OPTS_NO_ARGS) && optind < argc)
		return fail(err, errlen, "unknown option '%s'; see --help", argv[optind]);
	return 0;
}

int opts_target(const struct int_list *pids, const struct int_list *tids, int argc, char **argv, char ***cmd,
		char *err, size_t len)
{
	if (pids->n && tids->n)
		return fail(err, len, "-p and -t both filter; give one of them");
	if (optind < argc) {
		*cmd = &argv[optind];
		if (!argv[optind][0])
			return fail(err, len, "the command to run is an empty string");
	}
	return 0;
}
