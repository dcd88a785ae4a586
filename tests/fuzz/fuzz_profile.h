/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report's profile over a recording of fuzz_rec.h, as report_run loads it
 * (read_file) with the fixture root for symbols, for the targets of its
 * outputs: the flame graph, folded stacks, pprof.
 */
#ifndef SP_FUZZ_PROFILE_H
#define SP_FUZZ_PROFILE_H

#include "fuzz_rec.h"
#include "profile.h"
#include "session.h"

/* The profile of the recording the bytes make; NULL if none.  fuzz_profile_free frees both. */
static inline struct profile *fuzz_profile(const uint8_t *data, size_t size, const struct profile_opts *po,
					   struct fz_rec *rec)
{
	struct session *sess = NULL;
	struct profile *p = NULL;
	struct profile_opts o = *po;
	char err[512];

	if (fuzz_recording(data, size, rec))
		return NULL;
	o.root = FUZZ_ROOT;
	if (session__open(&sess, rec->path, &(struct session_opts){ .root = FUZZ_ROOT }, err, sizeof(err)))
		return NULL;
	if (profile__new(&p, sess, &o) || session__run(sess, err, sizeof(err)) || profile__finish(p)) {
		profile__free(p);
		session__free(sess);
		return NULL;
	}
	return p; /* p->sess: the caller frees it with p */
}

static inline void fuzz_profile_free(struct profile *p)
{
	struct session *sess = p ? p->sess : NULL;

	profile__free(p);
	session__free(sess);
}

#endif
