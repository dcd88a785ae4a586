/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A Java method's name as the JDK's own perf map writes it
 * (`RETURN pkg.Class.name(ARG, ARG)`, Method::external_name()), read from a
 * JVM's memory by its Method* (jvmfacts.h gives the layout).  Everything
 * read is the process's: lengths and indexes are bounded, a failed read
 * or an implausible value is an error, never a longer read.
 */
#ifndef SP_JVMNAMES_H
#define SP_JVMNAMES_H

#include <stddef.h>
#include <linux/types.h>

#include "jvmfacts.h"

struct jvm_method {
	__u64 constmethod;	/* the cookie: another method at a reused Method* has another */
	__u32 code_size;	/* bytes of bytecode */
	char name[4 * 1024 + 64]; /* the perf map's name */
};

/* The method at Method* m: 0, or -EFAULT (unreadable), -EBADMSG (no method's). */
int jvm_method_read(const struct jvm_facts *f, jvm_read_fn read, void *ctx, __u64 m, struct jvm_method *out);

/* Only the cookie of the method at m (one read): 0 or -EFAULT. */
int jvm_method_cookie(const struct jvm_facts *f, jvm_read_fn read, void *ctx, __u64 m, __u64 *constmethod);

#endif
