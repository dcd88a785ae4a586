/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The running kernel's BTF cut down to what one BPF object's CO-RE
 * relocations look at, for libbpf's btf_custom_path: libbpf then neither
 * reads nor parses /sys/kernel/btf/vmlinux (5.5 MB, 126k types on 6.18) to
 * relocate the object, and searches its candidates among a few hundred
 * types.  Built once per kernel build id and object, kept in the cache dir.
 */
#ifndef SP_MIN_BTF_H
#define SP_MIN_BTF_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct btf;

/* 2: the header names the kernel build and the object, so version 1's entries are not read. */
#define MIN_BTF_VERSION 2
/* Far above what a cut of our objects' types weighs (tens of KB): a bigger file is not ours. */
#define MIN_BTF_MAX (4u << 20)

struct min_btf {
	int fd;		/* a memfd holding the checked bytes, which libbpf reads by path; -1 */
	char path[40];	/* /proc/self/fd/N */
	bool hit;	/* read from the cache; else cut from the kernel's BTF */
	bool stored;	/* a miss whose cut was kept */
	__u32 size, nr_types;
	__u64 ns;	/* the whole of min_btf__get */
};

/*
 * The cut for the object obj (its ELF bytes, as a skeleton embeds them):
 * from the cache when an entry for this kernel and these BTF bytes is
 * there and sound (root's or ours, 0600, made for this kernel build id and
 * object, its size and SHA-256 right), else cut from the kernel's BTF and
 * kept, where the cache directory is ours alone (cache_dir_open; else the
 * cut is not kept, and -v says why).  0, or -errno when the object should
 * be loaded against the kernel's whole BTF (no build id, a relocation kind
 * the cut cannot serve, SPANPERF_NO_BTF_CACHE set).  m needs
 * min_btf__release either way.
 */
int min_btf__get(struct min_btf *m, const void *obj, size_t obj_sz);
void min_btf__release(struct min_btf *m);

/*
 * The cut itself, for tests: the types of kern that the CO-RE relocations
 * in obj's .BTF.ext name, with every member (what libbpf matches a field
 * access against), what they embed likewise, and what they point to as
 * empty structs of the same name and size.  *out is the caller's to free.
 */
int min_btf__cut(const struct btf *kern, const void *obj, size_t obj_sz, struct btf **out);

#endif
