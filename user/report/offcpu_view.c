// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "offcpu_view.h"

int pview_parse(const char *s, enum pview *out)
{
	if (!strcmp(s, "on-cpu"))
		*out = PV_ON_CPU;
	else if (!strcmp(s, "off-cpu"))
		*out = PV_OFF_CPU;
	else if (!strcmp(s, "wall"))
		*out = PV_WALL;
	else
		return -EINVAL;
	return 0;
}

/* An on-CPU stack's time: cpu-clock periods are ns; other events' counts at the sampling rate. */
static __u64 on_ns(const struct profile *p, const struct pstack *s)
{
	if (p->event_is_clock)
		return s->period;
	return p->sample_freq ? s->count * (1000000000ull / p->sample_freq) : s->count;
}

int profile_view(const struct profile *p, enum pview which, bool ns_weights, struct profile *v)
{
	size_t n_on = which == PV_OFF_CPU ? 0 : p->nr_stacks;
	size_t n_off = which == PV_ON_CPU ? 0 : p->nr_off_stacks;
	size_t mark = p->nr_funcs;

	*v = *p;
	v->stacks = calloc(n_on + n_off + 1, sizeof(*v->stacks));
	v->funcs = NULL;
	v->nr_stacks = 0;
	v->samples = v->period = 0;
	if (!v->stacks)
		return -ENOMEM;
	if (which == PV_WALL) {
		/* The functions, plus the mark; the frames of off-CPU stacks are new arrays. */
		v->funcs = malloc((p->nr_funcs + 1) * sizeof(*v->funcs));
		if (!v->funcs)
			return -ENOMEM;
		if (p->nr_funcs) /* funcs is NULL while a profile has none */
			memcpy(v->funcs, p->funcs, p->nr_funcs * sizeof(*v->funcs));
		v->funcs[mark] = (struct pfunc){ .name = OFFCPU_MARK, .dso = OFFCPU_MARK, .path = OFFCPU_MARK,
						 .dso_id = -1 };
		v->nr_funcs = p->nr_funcs + 1;
		v->event = "wall";
		v->event_is_clock = true;
	} else if (which == PV_OFF_CPU) {
		v->funcs = p->funcs;
		v->event = OFFCPU_EVENT_NAME;
		v->event_is_clock = true;
	} else {
		v->funcs = p->funcs;
	}
	for (size_t i = 0; i < n_on; i++) {
		struct pstack s = p->stacks[i];

		if (which == PV_WALL) {
			s.period = on_ns(p, &s); /* frames borrowed from p: see profile_view_free */
		}
		if (ns_weights)
			s.count = which == PV_WALL ? s.period : on_ns(p, &s);
		v->stacks[v->nr_stacks++] = s;
		v->samples += p->stacks[i].count;
		v->period += s.period;
	}
	for (size_t i = 0; i < n_off; i++) {
		struct pstack s = p->off_stacks[i];

		if (which == PV_WALL) {
			struct pframe *f = malloc((s.nr + 1) * sizeof(*f));

			if (!f)
				return -ENOMEM;
			f[0] = (struct pframe){ .func = mark };
			memcpy(f + 1, s.frames, s.nr * sizeof(*f));
			s.frames = f;
			s.nr++;
		}
		if (ns_weights)
			s.count = s.period;
		v->stacks[v->nr_stacks++] = s;
		v->samples += p->off_stacks[i].count;
		v->period += s.period;
	}
	/* What the filter left out, in the view's own units. */
	v->filtered_samples = (n_on ? p->filtered_samples : 0) + (n_off ? p->off_filtered_samples : 0);
	v->filtered_period = n_off ? p->off_filtered_period : 0;
	if (n_on && which == PV_WALL)
		v->filtered_period += p->event_is_clock	   ? p->filtered_period
				      : p->sample_freq ? p->filtered_samples * (1000000000ull / p->sample_freq)
							 : p->filtered_samples;
	else if (n_on)
		v->filtered_period += p->filtered_period;
	v->off_stacks = NULL;
	v->nr_off_stacks = 0;
	v->off_samples = v->off_period = v->off_filtered_samples = v->off_filtered_period = 0;
	return 0;
}

void profile_view_free(struct profile *v)
{
	if (!v || !v->stacks)
		return;
	/* Only a wall view owns frames: those of its off-CPU stacks, the ones that start with the mark. */
	if (v->event && !strcmp(v->event, "wall"))
		for (size_t i = 0; i < v->nr_stacks; i++)
			if (v->stacks[i].nr && v->stacks[i].frames[0].func == v->nr_funcs - 1)
				free(v->stacks[i].frames);
	if (v->event && !strcmp(v->event, "wall"))
		free(v->funcs);
	free(v->stacks);
	v->stacks = NULL;
}
