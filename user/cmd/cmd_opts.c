// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_opts.h"
#include "log.h"

int cmd_parse_failed(int e, const char *err)
{
	if (e == OPT_HELP)
		return 0;
	pr_err("%s", err);
	return 1;
}

int cmd_push_arg(const char ***list, int *nr, const char *arg)
{
	const char **ns = realloc(*list, (*nr + 1) * sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	*list = ns;
	ns[(*nr)++] = arg;
	return 0;
}

int cmd_percent_limit(const char *arg, double *pct, char *err, size_t errlen)
{
	char *end;

	*pct = strtod(arg, &end);
	if (*end || end == arg || !(*pct >= 0 && *pct <= 100))
		return set_errorf(err, errlen, -EINVAL, "--percent-limit '%s' is not a percentage", arg);
	return 0;
}

int cmd_slowest(const char *arg, double *pct, char *err, size_t errlen)
{
	char *end;

	*pct = strtod(arg, &end);
	if (*end || end == arg || !(*pct > 0 && *pct < 100))
		return set_errorf(err, errlen, -EINVAL, "--slowest '%s' is not a percentage above 0 and below 100", arg);
	return 0;
}
