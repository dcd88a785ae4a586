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
#include "sbuf.h"

struct jvm_method {
	__u64 cookie;		/* another method at a reused Method* has another (jvm_method_cookie) */
	__u32 code_size;	/* bytes of bytecode */
	char name[4 * 1024 + 64]; /* the perf map's name */
	char file[256];		/* its class's SourceFile ("Chain.java"), "" where none */
	/*
	 * The line of each bytecode index as py_names.h's runs (one code unit a
	 * bci, from firstline: bci 0's line), built from ConstMethod's compressed
	 * line number table; len 0 where it has none or it could not be read.
	 */
	struct sbuf lines;
	int firstline;
	bool lines_cut;		/* the table ended early (malformed): later bcis have no line */
};

/*
 * The method at Method* m: 0, or -EFAULT (unreadable), -EBADMSG (no
 * method's), -ENOMEM.  A line table that cannot be read leaves the method
 * named without lines.  out's buffers are reused: jvm_method_clear frees them.
 */
int jvm_method_read(const struct jvm_facts *f, jvm_read_fn read, void *ctx, __u64 m, struct jvm_method *out);
void jvm_method_clear(struct jvm_method *m);

/* A frame of an nmethod's debug information: a method and the bytecode index it is at. */
struct jvm_scope {
	__u64 method;
	__s32 bci;		/* -1: the method's entry (InvocationEntryBci); JVM_BCI_NONE: not known */
};
#define JVM_BCI_NONE (-2)
/* Scopes of one pc: MaxInlineLevel is 15 (JDK 17+), 9 before, and C2 adds no more. */
#define JVM_MAX_SCOPES 32

/*
 * The frames at pc of nmethod b (jvm_blob_at's), innermost first, from
 * the PcDesc for pc (the first at or after it, as HotSpot's
 * pc_desc_near) and its chain of scopes through the scopes data, each
 * method found in the nmethod's metadata: how many (at least 1, the last
 * b's own method), or -ENOENT (no debug information where it can be
 * read, or none for pc), -EBADMSG (an index, an offset or a count out of
 * range, a sender chain that does not go back, or more than max scopes:
 * what HotSpot writes never does that), -EFAULT.
 */
int jvm_pc_scopes(const struct jvm_facts *f, jvm_read_fn read, void *ctx, const struct jvm_blob *b, __u64 pc,
		  struct jvm_scope *out, int max);

/*
 * Only the cookie of the method at m (four reads: its ConstMethod and its
 * class's name Symbol): 0 or -EFAULT.
 */
int jvm_method_cookie(const struct jvm_facts *f, jvm_read_fn read, void *ctx, __u64 m, __u64 *cookie);

#endif
