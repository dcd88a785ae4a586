// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <linux/capability.h>

#include "buildid.h"
#include "fileio.h"
#include "host.h"
#include "kallsyms.h"
#include "parse.h"

/* The value of "key<tabs>: value" from /proc/cpuinfo, first CPU only. */
static char *cpuinfo_field(const char *text, const char *key)
{
	size_t kl = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *colon, *end;

		if (strncmp(l, key, kl) || (l[kl] != '\t' && l[kl] != ' ' && l[kl] != ':'))
			continue;
		colon = strchr(l, ':');
		end = strchr(l, '\n');
		if (!colon || (end && colon > end))
			return NULL;
		colon++;
		while (*colon == ' ')
			colon++;
		return strndup(colon, end ? (size_t)(end - colon) : strlen(colon));
	}
	return NULL;
}

int host_online_cpus(struct int_list *cpus)
{
	char buf[4096];
	int err = read_file_str("/sys/devices/system/cpu/online", buf, sizeof(buf));

	if (err)
		return err;
	return int_list_parse(cpus, buf, true, 1 << 16);
}

int host_fill_meta(struct pd_meta *m)
{
	struct utsname u;
	char *cpuinfo = NULL, buf[4096];
	size_t len;
	struct int_list cpus = {};
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);

	if (!uname(&u)) {
		m->hostname = strdup(u.nodename);
		m->osrelease = strdup(u.release);
		m->arch = strdup(u.machine);
	}
	m->version = strdup("spanperf " SPANPERF_VERSION);
	if (!read_file_str("/sys/devices/system/cpu/present", buf, sizeof(buf)) &&
	    !int_list_parse(&cpus, buf, true, 1 << 16)) {
		m->nr_cpus_avail = cpus.v[cpus.n - 1] + 1;
		int_list_free(&cpus);
	}
	if (!host_online_cpus(&cpus)) {
		m->nr_cpus_online = cpus.n;
		int_list_free(&cpus);
	}
	if (!m->nr_cpus_avail)
		m->nr_cpus_avail = m->nr_cpus_online;
	if (pages > 0 && psize > 0)
		m->total_mem_kb = (__u64)pages * psize / 1024;
	if (!read_file_all("/proc/cpuinfo", &cpuinfo, &len)) {
		char *vendor = cpuinfo_field(cpuinfo, "vendor_id");
		char *family = cpuinfo_field(cpuinfo, "cpu family");
		char *model = cpuinfo_field(cpuinfo, "model");
		char *stepping = cpuinfo_field(cpuinfo, "stepping");

		m->cpudesc = cpuinfo_field(cpuinfo, "model name");
		/* perf's x86 CPUID string: vendor,family,model,stepping */
		if (vendor && family && model && stepping &&
		    asprintf(&m->cpuid, "%s,%s,%s,%s", vendor, family, model, stepping) < 0)
			m->cpuid = NULL;
		free(vendor);
		free(family);
		free(model);
		free(stepping);
		free(cpuinfo);
	}
	return 0;
}

int host_kernel_text(__u64 *start, __u64 *end)
{
	char *text = NULL, *modules = NULL;
	size_t len, mlen = 0;
	__u8 id[BUILD_ID_MAX], size;
	char hex[2 * BUILD_ID_MAX + 1] = "";
	__u64 text_addr;
	int e;

	*start = *end = 0;
	e = kallsyms_text_start(&text_addr);
	if (e)
		return e == -ENOENT ? -EPERM : e;
	if (!buildid_kernel(id, &size))
		buildid_hex(id, size, hex);
	/*
	 * All of /proc/kallsyms costs 40 ms of kernel formatting: the copy of an
	 * earlier run in this layout has the same _etext, and report its symbols.
	 */
	if (read_file_all("/proc/modules", &modules, &mlen))
		mlen = 0;
	if (hex[0] && kallsyms_cache_fresh(hex, text_addr, modules, mlen) &&
	    !kallsyms_cache_text_range(hex, text_addr, start, end) && *start == text_addr)
		goto cleanup;
	e = kallsyms_read_proc(&text, &len);
	if (e)
		goto cleanup;
	e = kallsyms_text_range(text, len, start, end);
	if (!e && hex[0])
		kallsyms_store_cache(hex, *start, text, len, modules, mlen);
cleanup:
	free(text);
	free(modules);
	return e;
}

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif

bool have_bpf_privileges(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = {};
	uint64_t eff;

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &hdr, data))
		return false;
	eff = data[0].effective | ((uint64_t)data[1].effective << 32);
	if (eff & (1ull << CAP_SYS_ADMIN))
		return true;
	return (eff & (1ull << CAP_BPF)) && (eff & (1ull << CAP_PERFMON));
}

size_t host_own_vdso_size(unsigned long base)
{
	char line[512];
	size_t size = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	/* Our own maps: a line longer than the buffer names no [vdso]. */
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == base)
			size = hi - lo;
	}
	if (f)
		fclose(f);
	return size;
}
