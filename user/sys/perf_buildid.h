/* SPDX-License-Identifier: GPL-2.0 */
/*
 * perf's own build-id cache ($HOME/.debug, what perf record fills and perf
 * report reads first): a copy that record kept of a container's file is
 * entered there too, so that perf report on this host names its frames as
 * spanperf report does.  perf takes the file's build id from the MMAP2
 * record (attr.build_id), not from the path, so the host's file of the same
 * name is never confused with it.
 */
#ifndef SP_PERF_BUILDID_H
#define SP_PERF_BUILDID_H

/*
 * Enters copy, the file mapped at path (as the process saw it) with build
 * id hex, in perf's layout: DIR/PATH/HEX/elf (a hard link to copy, or a
 * symbolic link where copy is on another file system) and
 * DIR/.build-id/HE/X... -> ../../PATH/HEX.  DIR is $HOME/.debug.
 * 0 (also when it is there already) or -errno.
 */
int perf_buildid_link(const char *hex, const char *path, const char *copy);

#endif
