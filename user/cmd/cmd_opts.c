// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>

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
