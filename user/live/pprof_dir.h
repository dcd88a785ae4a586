/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --switch-output --pprof-dir DIR: beside each file, DIR/FILE.pb.gz,
 * the pprof profile of that file's samples, built as they were recorded (a
 * window of the live session, live_record.h), never read back from the
 * file; kept and deleted along with the files (--switch-max-files).
 */
#ifndef SP_PPROF_DIR_H
#define SP_PPROF_DIR_H

struct record_opts;

/* The directory exists and takes files: said now (one sentence), not after the first window.  0 or -EINVAL. */
int pprof_dir_check(const char *dir);
/* record__run for o with o->pprof_dir's profiles; as record__run, but a profile lost is said and skipped. */
int pprof_dir_record(struct record_opts *o, int argc, char **argv, int *exit_code);

#endif
