/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Debug files by build id from debuginfod servers, through elfutils'
 * libdebuginfod (its HTTP client, its servers list DEBUGINFOD_URLS, its
 * cache ~/.cache/debuginfod_client; as root a directory of root's own,
 * whatever HOME says), for the dsos a distribution stripped: their symbols,
 * their CFI, their lines and inlined functions.
 *
 * A fetched file is used only when the build id of the bytes copied out of
 * the library's cache is the one asked for (a server may serve another
 * build's file, or garbage), and is then kept beside record's copies in the
 * build-id cache (buildid_debug_path), where later reports find it without
 * the network.  Neither a download nor a copy runs past 1 GiB.
 */
#ifndef SP_DEBUGINFO_H
#define SP_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <elfutils/libdwfl.h>

struct debuginfo_opts {
	const char *urls;      /* --debuginfod URLS, else DEBUGINFOD_URLS (debuginfo_opts_from_env) */
	bool offline;	       /* --offline: never the network */
	double request_s;      /* per request; 0: DEBUGINFOD_TIMEOUT, else 10 s */
	double deadline_s;     /* for all of them; 0: 30 s */
	int threads;	       /* parallel requests; 0: up to 8 */
	bool progress;	       /* a progress line on stderr after a second (a terminal) */
};

struct debuginfo_stats {
	unsigned wanted, fetched, cached; /* cached: in libdebuginfod's cache already */
	unsigned not_found;		  /* 404 from every server */
	unsigned unreachable;		  /* connection refused, no route, server error */
	unsigned timed_out;		  /* over the per-request time or the deadline */
	unsigned refused;		  /* another build id, or not ELF: never used */
	unsigned failed;		  /* anything else (keeping the copy, memory) */
	double seconds;
};

/*
 * Completes o from the environment, before anything reads a debug file: the
 * servers of DEBUGINFOD_URLS unless --debuginfod named them; the variable
 * is then taken out of the environment, where libdw's own debuginfod hook
 * would find it and fetch one file at a time, with no deadline, while
 * unwinding.  From then on only debuginfo_fetch(o) goes to the network,
 * and never with o->offline.
 */
void debuginfo_opts_from_env(struct debuginfo_opts *o);

/* Whether a report should fetch at all: servers in o and not offline. */
bool debuginfo_enabled(const struct debuginfo_opts *o);

/*
 * Fetches the debug files of build ids (lower-case hex) that the build-id
 * cache lacks, in parallel, from o->urls.  Never fails on what servers do:
 * that is counted in st.  libdebuginfod reads its servers from
 * DEBUGINFOD_URLS: set for the fetch and unset after it, so that nothing
 * else in the process (libdw's own debuginfod hook) goes to the network
 * behind the deadline.  0, or -errno (-ENOMEM).
 */
int debuginfo_fetch(const struct debuginfo_opts *o, const char *const *hex, size_t n, struct debuginfo_stats *st);

/*
 * The kept debug file of a build id, checked: 0 and its path, or -ENOENT.
 * A file whose build id is not hex's is never returned.
 */
int debuginfo_path(const char *hex, char *out, size_t len);

/*
 * The debug file of a build id on this host, without the network: the
 * distribution's (/usr/lib/debug/.build-id/xx/rest.debug), else the one a
 * debuginfod server served earlier (debuginfo_path).  Checked as there.
 */
int debuginfo_local_path(const char *hex, char *out, size_t len);

/*
 * libdw's find_debuginfo callback (Dwfl_Callbacks): the debug file kept
 * for the module's build id (one debuginfod served), else libdw's usual
 * places (/usr/lib/debug, debuglink).  Shared by the unwinder and the
 * source-line reader so that both read the same file.
 */
int debuginfo_dwfl_find(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name);

/*
 * The descriptor to give libdw for the ELF file fd: fd itself, or where its
 * DWARF is compressed the inflated copy that libdw maps (zdebug.h), which
 * then replaces fd (closed).  debuginfo_dwfl_find does the same for the
 * debug files it finds.
 */
int debuginfo_inflated(int fd);

/* One line for -v and one warning for failures, once. */
void debuginfo_say(const struct debuginfo_opts *o, const struct debuginfo_stats *st);

#endif
