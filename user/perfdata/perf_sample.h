/* SPDX-License-Identifier: GPL-2.0 */
/*
 * perf record encoding: PERF_RECORD_SAMPLE for every sample_type bit, the
 * sample_id trailer of the other records, and the side-band records
 * spanperf writes or reads (COMM, MMAP, MMAP2, FORK, EXIT, LOST,
 * LOST_SAMPLES, THROTTLE, UNTHROTTLE, FINISHED_ROUND).
 *
 * The size and write functions walk the fields in the same order as the
 * kernel's perf_output_sample() and perf_event_*_output(), so a computed
 * size and the written bytes cannot disagree; the parser walks them once
 * more, with bounds checks.
 */
#ifndef SP_PERF_SAMPLE_H
#define SP_PERF_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

/* The sample_type bits this codec knows; a unit test fails when the kernel adds one. */
#define PD_SAMPLE_KNOWN                                                                            \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_READ |  \
	 PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |             \
	 PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_RAW | PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER | \
	 PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC |                        \
	 PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TRANSACTION | PERF_SAMPLE_REGS_INTR |                   \
	 PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_AUX | PERF_SAMPLE_CGROUP |                               \
	 PERF_SAMPLE_DATA_PAGE_SIZE | PERF_SAMPLE_CODE_PAGE_SIZE | PERF_SAMPLE_WEIGHT_STRUCT)

/* perf's own record types, 64 and up (tools/lib/perf/include/perf/event.h): no sample_id trailer. */
#define PD_RECORD_USER_START 64
#define PD_RECORD_FINISHED_ROUND 68

#define PD_CONTEXT_KERNEL ((__u64)-128)
#define PD_CONTEXT_USER ((__u64)-512)
#define PD_CONTEXT_MAX ((__u64)-4095)

/*
 * The user registers a DWARF unwind needs on x86-64, as perf asks for them
 * (its PERF_REGS_MASK): every PERF_REG_X86_* below R15 but the segment
 * registers DS, ES, FS and GS.  The sample holds them in bit order: AX BX CX
 * DX SI DI BP SP IP FLAGS CS SS R8..R15.
 */
#define PD_X86_64_DWARF_REGS 0xff0fffULL

/* A decoded sample.  Pointers refer into the record (parse) or the caller's data (write). */
struct pd_sample {
	__u64 id, ip, time, addr, stream_id, period;
	__u32 pid, tid, cpu, cpu_res;
	/* READ: one value, or with PERF_FORMAT_GROUP nr entries in file layout. */
	__u64 read_nr, read_time_enabled, read_time_running;
	__u64 read_value, read_id, read_lost;
	const __u64 *read_group; /* read_nr entries of 1-3 u64 each */
	__u64 callchain_nr;
	const __u64 *callchain;
	__u32 raw_size; /* bytes after the u32 size, including padding */
	const void *raw;
	__u64 branch_nr, branch_hw_idx;
	const __u64 *branch_entries; /* 3 u64 per entry */
	__u64 regs_user_abi;
	const __u64 *regs_user;
	__u64 stack_user_size, stack_user_dyn_size;
	const void *stack_user;
	__u64 weight, data_src, transaction;
	__u64 regs_intr_abi;
	const __u64 *regs_intr;
	__u64 phys_addr, cgroup, data_page_size, code_page_size;
	__u64 aux_size;
	const void *aux;
};

/* Size of a whole SAMPLE record (header included), or 0 if it cannot be encoded. */
size_t pd_sample_size(const struct perf_event_attr *attr, const struct pd_sample *s);
/* Writes a SAMPLE record; returns its size, or -ENOSPC/-EINVAL. */
long pd_sample_write(void *buf, size_t bufsz, const struct perf_event_attr *attr, __u16 misc,
		     const struct pd_sample *s);
/* Decodes the body of a SAMPLE record (rec points at the header). */
int pd_sample_parse(const struct perf_event_attr *attr, const void *rec, size_t len,
		    struct pd_sample *s);

/* A sample's time alone (0 without PERF_SAMPLE_TIME); -EINVAL if the record is too short for it. */
int pd_sample_time(const struct perf_event_attr *attr, const void *rec, size_t len, __u64 *time);

/* The sample_id trailer of non-sample records (sample_id_all=1). */
size_t pd_trailer_size(const struct perf_event_attr *attr);
void pd_trailer_write(void *buf, const struct perf_event_attr *attr, const struct pd_sample *s);
int pd_trailer_parse(const struct perf_event_attr *attr, const void *rec, size_t len,
		     struct pd_sample *s);

/* Where the id is: the first u64 of a sample, the last of a trailer (IDENTIFIER). */
int pd_record_id(const void *rec, size_t len, __u64 *id);

/*
 * The attr of records spanperf's BPF programs write to their rings (spans,
 * off-CPU blocks, switch-outs), as perf's --off-cpu declares its own: a
 * software BPF-output event, on the recording's CLOCK_MONOTONIC, each
 * sample with IDENTIFIER, IP, TID, TIME, CPU and PERIOD, and then more.
 */
void pd_bpf_output_attr(struct perf_event_attr *a, __u64 more);

/*
 * Side-band records: one struct per kind, one walker per layout that sizes,
 * writes and parses it (as walk_sample does for samples), so that a field
 * is stated once; the sample_id trailer of kernel records goes through the
 * sample walker.  Strings point into the record (parse) or the caller's
 * data (write).
 */
struct pd_comm {
	__u32 pid, tid;
	const char *comm; /* exec: PERF_RECORD_MISC_COMM_EXEC in misc */
};

/* PERF_RECORD_MMAP and MMAP2 alike; the fields from maj on are MMAP2's. */
struct pd_mmap {
	__u32 pid, tid;
	__u64 start, len, pgoff;
	__u32 maj, min;
	__u64 ino, ino_generation;
	/*
	 * build_id_size > 0: the record carries the file's build id in place
	 * of maj..ino_generation (PERF_RECORD_MISC_MMAP_BUILD_ID, the layout
	 * the kernel writes for attr.build_id, Linux 5.12).
	 */
	__u8 build_id_size;
	__u8 build_id[20];
	__u32 prot, flags;
	const char *filename;
};

/* PERF_RECORD_FORK and EXIT. */
struct pd_task {
	__u32 pid, ppid, tid, ptid;
	__u64 time;
};

/* PERF_RECORD_LOST (id, lost) and LOST_SAMPLES (lost only; id stays 0). */
struct pd_lost {
	__u64 id, lost;
};

/* PERF_RECORD_THROTTLE and UNTHROTTLE. */
struct pd_throttle {
	__u64 time, id, stream_id;
};

struct pd_sideband {
	__u32 type; /* PERF_RECORD_*, or PD_RECORD_FINISHED_ROUND */
	/*
	 * The header's misc, written as given and read as found, but for
	 * MMAP2's PERF_RECORD_MISC_MMAP_BUILD_ID: that bit says which layout
	 * follows, so the writer sets it from build_id_size.
	 */
	__u16 misc;
	union {
		struct pd_comm comm;
		struct pd_mmap mmap;
		struct pd_task task;
		struct pd_lost lost;
		struct pd_throttle throttle;
	};
	struct pd_sample sample_id; /* the trailer (sample_id_all): pid, tid, time, id, stream_id, cpu */
};

/* A record's cpumode is the kernel's (for MMAP: a kernel or module mapping). */
static inline bool pd_misc_kernel(__u16 misc)
{
	return (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
}

/* Whether the codec has a layout for this record type (a unit test fails when the kernel adds one). */
bool pd_sideband_known(__u32 type);
/*
 * Size of a whole side-band record, header included, or 0 if its type is
 * unknown or it cannot be encoded.  attr gives the trailer's layout; NULL:
 * no trailer.
 */
size_t pd_sideband_size(const struct perf_event_attr *attr, const struct pd_sideband *r);
/*
 * Writes a side-band record; returns its size, -ENOSPC if it does not fit
 * buf or a record, or -EINVAL for a type without a layout or a NULL name.
 */
long pd_sideband_write(void *buf, size_t bufsz, const struct perf_event_attr *attr, const struct pd_sideband *r);
/*
 * Decodes a side-band record (rec points at the header; len is what may be
 * read).  attr gives the trailer's layout: the body ends where the trailer
 * begins, and a string must end inside it.  NULL: the trailer is not read
 * and the body runs to the record's end.  0, -EINVAL for a record too short
 * or a string not NUL-terminated, -EOPNOTSUPP for a type without a layout.
 */
int pd_sideband_parse(const struct perf_event_attr *attr, const void *rec, size_t len, struct pd_sideband *r);

/*
 * Where a fixed-position sample field (IDENTIFIER, IP, TID, TIME) sits in a
 * SAMPLE record of this attr, for readers that peek at one field per
 * record; -1 if the attr does not carry it.
 */
long pd_sample_offset(const struct perf_event_attr *attr, __u64 field);

#endif
