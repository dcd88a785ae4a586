// SPDX-License-Identifier: GPL-2.0
#include "cmd_opts.h"
#include "log.h"

int cmd_parse_failed(int e, const char *err)
{
	if (e == OPT_HELP)
		return 0;
	pr_err("%s", err);
	return 1;
}
