// SPDX-License-Identifier: GPL-2.0
/* The event-name parser: names, lists, PMU terms and modifiers. */
#include "events.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size), err[256];
	struct event_spec ev, *evs;
	int n;

	if (!s)
		return 0;
	event_parse(s, &ev, err, sizeof(err));
	if (!event_list_parse(s, &evs, &n, err, sizeof(err)))
		free(evs);
	free(s);
	return 0;
}
