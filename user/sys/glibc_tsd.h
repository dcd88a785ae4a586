/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where glibc keeps a thread's pthread_setspecific values (x86-64): in its
 * struct pthread, which is at the thread pointer (fsbase): keys below 32
 * in an inline block of { seq, data } pairs, the others in blocks of 32
 * that an array of pointers after it names.  BPF reads another thread's
 * value for a key there (CPython's thread state: bpf/python.bpf.h).
 *
 * The layout is glibc's private business: this machine's is measured by
 * experiment (a key of our own, read back from our own thread), and another
 * libc (a container's) is read from its pthread_getspecific's code, which
 * must match the experiment on this machine's libc to be trusted at all.
 */
#ifndef SP_GLIBC_TSD_H
#define SP_GLIBC_TSD_H

#include <linux/types.h>

struct glibc_tsd {
	__u32 first;  /* key k < 32: its value at fsbase + first + 16 * k */
	__u32 second; /* key k >= 32: block at fsbase + second + 8 * (k / 32), value at block + 16 * (k % 32) + 8; 0: unknown */
};

/* This process's glibc's layout, by experiment: 0, or -errno (-ENOENT: not found where glibc keeps it). */
int glibc_tsd_calibrate(struct glibc_tsd *out);
/* A libc's (or libpthread's, before glibc 2.34) layout from its pthread_getspecific: 0, -ENOENT, -EINVAL. */
int glibc_tsd_decode(int fd, struct glibc_tsd *out);
/* The fsbase offset of key's value, or of its block pointer (*two_level): 0, or -ERANGE when the layout cannot say. */
int glibc_tsd_offsets(const struct glibc_tsd *t, __u32 key, __u32 *off, __u32 *off2, int *two_level);

#endif
