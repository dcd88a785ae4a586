// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "perf_open.h"

int sys_perf_event_open(struct perf_event_attr *attr, int pid, int cpu, int group_fd,
			unsigned long flags)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
}

int pe_try_open(const struct perf_event_attr *attr, int cpu)
{
	struct perf_event_attr a = *attr;
	int fd;

	a.disabled = 1;
	fd = sys_perf_event_open(&a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}
