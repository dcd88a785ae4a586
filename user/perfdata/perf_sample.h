/* SPDX-License-Identifier: GPL-2.0 */
/*
 * perf record encoding: PERF_RECORD_SAMPLE for every sample_type bit, the
 * sample_id trailer of the other records, and builders for the side-band
 * records spanperf synthesizes (COMM, MMAP, MMAP2, FORK, EXIT, LOST...).
 *
 * The size and write functions walk the bits in the same order as the
 * kernel's perf_output_sample(), so a computed size and the written bytes
 * cannot disagree; the parser walks them once more, with bounds checks.
 */
#ifndef SP_PERF_SAMPLE_H
#define SP_PERF_SAMPLE_H

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

/* perf's own record types, 64 and up (tools/lib/perf/include/perf/event.h). */
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

/* The sample_id trailer of non-sample records (sample_id_all=1). */
size_t pd_trailer_size(const struct perf_event_attr *attr);
void pd_trailer_write(void *buf, const struct perf_event_attr *attr, const struct pd_sample *s);
int pd_trailer_parse(const struct perf_event_attr *attr, const void *rec, size_t len,
		     struct pd_sample *s);

/* Where the id is: the first u64 of a sample, the last of a trailer (IDENTIFIER). */
int pd_record_id(const void *rec, size_t len, __u64 *id);

/*
 * Side-band builders.  `attr` and `ts` give the trailer (id, time, pid/tid,
 * cpu).  Each returns the record size or -ENOSPC if buf is too small.
 */
long pd_build_comm(void *buf, size_t bufsz, const struct perf_event_attr *attr,
		   const struct pd_sample *ts, __u32 pid, __u32 tid, const char *comm, int exec);
long pd_build_mmap(void *buf, size_t bufsz, const struct perf_event_attr *attr,
		   const struct pd_sample *ts, __u16 misc, __u32 pid, __u32 tid, __u64 start,
		   __u64 len, __u64 pgoff, const char *filename);
struct pd_mmap2_info {
	__u32 maj, min;
	__u64 ino, ino_generation;
	__u32 prot, flags;
	/*
	 * With build_id_size > 0 the record carries the file's build id in
	 * place of maj..ino_generation (PERF_RECORD_MISC_MMAP_BUILD_ID, the
	 * layout the kernel writes for attr.build_id, Linux 5.12).
	 */
	__u8 build_id_size;
	__u8 build_id[20];
};
long pd_build_mmap2(void *buf, size_t bufsz, const struct perf_event_attr *attr,
		    const struct pd_sample *ts, __u16 misc, __u32 pid, __u32 tid, __u64 start,
		    __u64 len, __u64 pgoff, const struct pd_mmap2_info *info, const char *filename);
long pd_build_task(void *buf, size_t bufsz, const struct perf_event_attr *attr,
		   const struct pd_sample *ts, __u32 type, __u32 pid, __u32 ppid, __u32 tid,
		   __u32 ptid, __u64 time);
long pd_build_lost(void *buf, size_t bufsz, const struct perf_event_attr *attr,
		   const struct pd_sample *ts, __u64 id, __u64 lost);
long pd_build_finished_round(void *buf, size_t bufsz);

/*
 * Side-band parsers, one per record kind, the counterparts of the builders.
 * rec points at the header; len is the record's size.  Each returns 0, or
 * -EINVAL for a record too short or a name not NUL-terminated inside it.
 * Strings point into the record.
 */
struct pd_comm {
	__u32 pid, tid;
	const char *comm;
	int exec; /* PERF_RECORD_MISC_COMM_EXEC: the process exec'd */
};
int pd_parse_comm(const void *rec, size_t len, struct pd_comm *out);

struct pd_mmap {
	__u32 pid, tid;
	__u64 start, len, pgoff;
	const char *filename;
	int kernel; /* cpumode: a kernel or module mapping */
	__u32 prot, flags; /* MMAP2 only */
	__u8 build_id_size; /* > 0: the mapped file's build id, from the record */
	__u8 build_id[20];
};
/* PERF_RECORD_MMAP and MMAP2 alike. */
int pd_parse_mmap(const void *rec, size_t len, struct pd_mmap *out);

struct pd_task {
	__u32 pid, ppid, tid, ptid;
	__u64 time;
};
/* PERF_RECORD_FORK and EXIT. */
int pd_parse_task(const void *rec, size_t len, struct pd_task *out);

/* PERF_RECORD_LOST (id, lost) and LOST_SAMPLES (lost only; id is left 0). */
int pd_parse_lost(const void *rec, size_t len, __u64 *id, __u64 *lost);

/*
 * Where a fixed-position sample field (IDENTIFIER, IP, TID, TIME) sits in a
 * SAMPLE record of this attr, for readers that peek at one field per
 * record; -1 if the attr does not carry it.
 */
long pd_sample_offset(const struct perf_event_attr *attr, __u64 field);

#endif
