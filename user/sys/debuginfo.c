// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <dlfcn.h>
#include <elfutils/debuginfod.h>

#include "atomic_file.h"
#include "buildid.h"
#include "debuginfo.h"
#include "elf_budget.h"
#include "fileio.h"
#include "log.h"
#include "util.h"
#include "zdebug.h"

#define MAX_THREADS 8
#define DEFAULT_REQUEST_S 10.0
#define DEFAULT_DEADLINE_S 30.0
/*
 * A debug file larger than this is neither downloaded nor kept: the
 * library stops a transfer past it (DEBUGINFOD_MAXSIZE for a server's
 * Content-Length, our progress callback for a body without one), and keep()
 * copies no more.
 */
#define MAX_KEEP_BYTES (1024ull << 20)

/*
 * libdebuginfod, opened when a fetch first needs it rather than linked: it
 * brings libcurl-gnutls and GnuTLS, loaded and relocated before main by
 * every spanperf command (see ch_http.c's libcurl), where only report with
 * debuginfod servers uses it.  Where it cannot be loaded, every fetch fails
 * as one would without the library's client.
 */
static struct {
	__typeof__(&debuginfod_begin) begin;
	__typeof__(&debuginfod_end) end;
	__typeof__(&debuginfod_find_debuginfo) find_debuginfo;
	__typeof__(&debuginfod_set_progressfn) set_progressfn;
	__typeof__(&debuginfod_set_user_data) set_user_data;
	__typeof__(&debuginfod_get_user_data) get_user_data;
} dc;
static bool dc_ok;
static pthread_once_t dc_once = PTHREAD_ONCE_INIT;

static void dc_init(void)
{
	void *h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return;
#define DC_SYM(f) (*(void **)&dc.f = dlsym(h, "debuginfod_" #f))
	dc_ok = DC_SYM(begin) && DC_SYM(end) && DC_SYM(find_debuginfo) && DC_SYM(set_progressfn) &&
		DC_SYM(set_user_data) && DC_SYM(get_user_data);
#undef DC_SYM
}

enum outcome { O_NONE, O_FETCHED, O_CACHED, O_NOT_FOUND, O_UNREACHABLE, O_TIMED_OUT, O_REFUSED, O_FAILED };

struct job {
	const char *hex;
	enum outcome out;
};

struct fetcher {
	struct job *jobs;
	size_t n;
	size_t next;	  /* the next job to take, under lock */
	unsigned done;	  /* jobs finished, under lock */
	enum outcome give_up; /* once the servers time out or cannot be reached: the rest the same, unasked */
	__u64 start_ns, deadline_ns, request_ns;
	pthread_mutex_t lock;
};

/* What one thread's client is doing: its progress callback ends a request past its time or size. */
struct worker {
	struct fetcher *f;
	__u64 req_start;
	bool aborted;
	bool too_big; /* aborted for its size: the body ran past keep_bound */
	bool asked;   /* the library went to a server (its progress callback ran) */
};

/*
 * The most a download may be: MAX_KEEP_BYTES, or less if the environment's
 * DEBUGINFOD_MAXSIZE says so.  Set once, before the workers start.
 */
static __u64 keep_max = MAX_KEEP_BYTES;

/* libdw's debuginfod hook reads the variable whenever it misses a file: it stays unset but while we fetch. */
static void no_network(void)
{
	unsetenv("DEBUGINFOD_URLS");
}

void debuginfo_opts_from_env(struct debuginfo_opts *o)
{
	/* glibc never frees an environment string: the pointer outlives unsetenv. */
	if (!o->urls)
		o->urls = getenv("DEBUGINFOD_URLS");
	no_network();
}

bool debuginfo_enabled(const struct debuginfo_opts *o)
{
	return !o->offline && o->urls && *o->urls;
}

static int debug_path(const char *hex, char *out, size_t len)
{
	int e = buildid_cache_path(hex, out, len);

	if (e)
		return e;
	if (strlen(out) + 7 > len)
		return -ENAMETOOLONG;
	strcat(out, ".debug");
	return 0;
}

/* Whether the ELF file at fd has exactly this build id: what decides that a download is usable. */
static int check_build_id(const char *path, const char *hex)
{
	__u8 id[BUILD_ID_MAX], size;
	char got[2 * BUILD_ID_MAX + 1];
	int e = buildid_from_file(path, id, &size);

	if (e)
		return e == -ENOENT ? -EBADMSG : e; /* no build id, or not ELF: corrupt */
	buildid_hex(id, size, got);
	return strcmp(got, hex) ? -EBADMSG : 0;
}

int debuginfo_path(const char *hex, char *out, size_t len)
{
	if (debug_path(hex, out, len) || access(out, R_OK) || check_build_id(out, hex))
		return -ENOENT;
	return 0;
}

int debuginfo_local_path(const char *hex, char *out, size_t len)
{
	/* A distribution's -dbgsym package puts it here, by build id. */
	if (strlen(hex) > 2 && (size_t)snprintf(out, len, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2) < len &&
	    !access(out, R_OK) && !check_build_id(out, hex))
		return 0;
	return debuginfo_path(hex, out, len);
}

/* Whether the ELF file at fd has exactly this build id: 0, or -EBADMSG (another build's, or not ELF). */
static int check_build_id_fd(int fd, const char *hex)
{
	__u8 id[BUILD_ID_MAX], size;
	char got[2 * BUILD_ID_MAX + 1];

	if (buildid_from_fd(fd, id, &size))
		return -EBADMSG;
	buildid_hex(id, size, got);
	return strcmp(got, hex) ? -EBADMSG : 0;
}

/*
 * Copies the fetched file into the build-id cache, root's only like
 * record's copies, and keeps it only if the bytes copied carry the build
 * id asked for: checked on our copy, which no one else can change, not on
 * the library's file by its name.  At most keep_max bytes are copied,
 * however the file grows meanwhile.  -EBADMSG for another build's file.
 */
static int keep(int in, const char *dest, const char *hex)
{
	char tmp[PATH_MAX];
	struct atomic_file af;
	struct stat st;
	char buf[65536];
	__u64 done = 0;
	ssize_t n = 0;
	int e;

	if (fstat(in, &st) || !S_ISREG(st.st_mode) || (__u64)st.st_size > keep_max)
		return -EFBIG;
	snprintf(tmp, sizeof(tmp), "%s", dest);
	e = mkdir_parents(tmp);
	if (e)
		return e;
	e = atomic_file__open(&af, dest, 0600, false);
	if (e)
		return e;
	while (!e && (n = pread(in, buf, sizeof(buf), done)) > 0) {
		done += n;
		e = done > keep_max ? -EFBIG : write_all(af.fd, buf, n);
	}
	if (!e && n < 0)
		e = -errno;
	if (!e)
		e = check_build_id_fd(af.fd, hex);
	if (!e)
		e = atomic_file__commit(&af);
	atomic_file__release(&af);
	return e;
}

/* libdebuginfod calls this while a transfer runs: non-zero ends it. */
static int progress(debuginfod_client *c, long a, long b)
{
	struct worker *w = dc.get_user_data(c);
	__u64 now = now_ns(CLOCK_MONOTONIC);

	(void)b;
	w->asked = true;
	if (now - w->req_start > w->f->request_ns || now > w->f->deadline_ns) {
		w->aborted = true;
		return 1;
	}
	/*
	 * a is what the committed server sent so far (before one is, a count
	 * of the library's loops): DEBUGINFOD_MAXSIZE stops only a body whose
	 * Content-Length says it is too large, not one sent without it.
	 */
	if (a > 0 && (__u64)a > keep_max) {
		w->too_big = true;
		return 1;
	}
	return 0;
}

/*
 * libdebuginfod caches a failed request as a miss (an empty file; 0.188
 * makes it 0644, later versions 000), believed for cache_miss_s, 600 s by
 * default: right for a 404, wrong for a request we cut at its time, which
 * would then read as "not found" for ten minutes.  Its cache is where
 * debuginfod-find(1) says; a debug file is never empty.
 */
static void forget_miss(const char *hex)
{
	const char *env = getenv("DEBUGINFOD_CACHE_PATH"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char path[PATH_MAX];
	struct stat st;
	int n;

	if (env && *env)
		n = snprintf(path, sizeof(path), "%s/%s/debuginfo", env, hex);
	else if (xdg && *xdg)
		n = snprintf(path, sizeof(path), "%s/debuginfod_client/%s/debuginfo", xdg, hex);
	else if (home && *home)
		n = snprintf(path, sizeof(path), "%s/.cache/debuginfod_client/%s/debuginfo", home, hex);
	else
		return;
	if (n > 0 && (size_t)n < sizeof(path) && !lstat(path, &st) && S_ISREG(st.st_mode) && !st.st_size)
		unlink(path);
}

static enum outcome classify(int rc, bool aborted)
{
	if (aborted || rc == -ETIME || rc == -ETIMEDOUT || rc == -EINTR)
		return O_TIMED_OUT;
	switch (rc) {
	case -ENOENT:
		return O_NOT_FOUND;
	case -ECONNREFUSED:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -ECONNRESET:
	case -EADDRNOTAVAIL:
	case -ENOSYS: /* no server reachable at all */
		return O_UNREACHABLE;
	default:
		return O_FAILED;
	}
}

static enum outcome fetch_one(debuginfod_client *c, struct worker *w, const char *hex)
{
	char dest[PATH_MAX];
	char *path = NULL;
	int fd, e;
	enum outcome o;

	if (debug_path(hex, dest, sizeof(dest)))
		return O_FAILED;
	w->req_start = now_ns(CLOCK_MONOTONIC);
	w->aborted = w->too_big = w->asked = false;
	fd = dc.find_debuginfo(c, (const unsigned char *)hex, 0, &path);
	if (fd < 0) {
		free(path);
		/* Too large: by its Content-Length (the library's -EFBIG), or as it came. */
		o = w->too_big || fd == -EFBIG ? O_FAILED : classify(fd, w->aborted);
		if (o == O_TIMED_OUT || o == O_UNREACHABLE || w->too_big)
			forget_miss(hex);
		return o;
	}
	e = keep(fd, dest, hex);
	if (e == -EBADMSG) {
		/*
		 * Another build's file, or not ELF: never used, and not left in
		 * libdebuginfod's cache, where the next report would take it
		 * without asking the server again.
		 */
		if (path)
			unlink(path);
		o = O_REFUSED;
	} else {
		o = e ? O_FAILED : w->asked ? O_FETCHED : O_CACHED;
	}
	close(fd);
	free(path);
	return o;
}

static void *worker_main(void *arg)
{
	struct fetcher *f = arg;
	struct worker w = { .f = f };
	debuginfod_client *c = dc_ok ? dc.begin() : NULL;

	if (c) {
		dc.set_user_data(c, &w);
		dc.set_progressfn(c, progress);
	}
	for (;;) {
		struct job *j = NULL;

		pthread_mutex_lock(&f->lock);
		if (f->next < f->n)
			j = &f->jobs[f->next++];
		pthread_mutex_unlock(&f->lock);
		if (!j)
			break;
		pthread_mutex_lock(&f->lock);
		j->out = f->give_up;
		pthread_mutex_unlock(&f->lock);
		if (j->out)
			;
		else if (!c)
			j->out = O_FAILED;
		else if (now_ns(CLOCK_MONOTONIC) > f->deadline_ns)
			j->out = O_TIMED_OUT;
		else
			j->out = fetch_one(c, &w, j->hex);
		pthread_mutex_lock(&f->lock);
		f->done++;
		/*
		 * libdebuginfod asks every server at once and fails only when all
		 * did: a timeout or no connection will be the same for the rest.
		 */
		if ((j->out == O_TIMED_OUT || j->out == O_UNREACHABLE) && !f->give_up)
			f->give_up = j->out;
		pthread_mutex_unlock(&f->lock);
	}
	if (c)
		dc.end(c);
	return NULL;
}

/*
 * As root, libdebuginfod's cache is a directory of root's own, named in
 * DEBUGINFOD_CACHE_PATH before any client reads the environment: the
 * library would otherwise take $HOME's or $XDG_CACHE_HOME's (sudo -E keeps
 * a user's), and return whatever that user left there under a build id,
 * with no server asked.  The variable's own directory if it is root's and
 * no one else may write it or above it, else debuginfod_client in root's
 * cache home (cache_home vets the environment's the same way).  0, or
 * -EPERM if the directory there is not root's own after all.
 */
static int root_cache(void)
{
	const char *env = getenv("DEBUGINFOD_CACHE_PATH");
	char dir[PATH_MAX], path[PATH_MAX];
	struct stat st;
	int n;

	if (env && env[0] == '/' && dir_is_ours(env)) {
		n = snprintf(path, sizeof(path), "%s", env);
	} else {
		if (cache_home(dir, sizeof(dir)))
			return -EPERM;
		n = snprintf(path, sizeof(path), "%s/debuginfod_client", dir);
	}
	if (n < 0 || (size_t)n >= sizeof(path) - 1)
		return -ENAMETOOLONG;
	/* mkdir_parents makes what is above the last '/'. */
	strcat(path, "/");
	n = mkdir_parents(path);
	path[strlen(path) - 1] = 0;
	if (n)
		return n;
	if (lstat(path, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) ||
	    !dir_is_ours(path)) {
		pr_warn("debuginfod: %s is not root's own directory (others may write it or above it): nothing fetched",
			path);
		return -EPERM;
	}
	return setenv("DEBUGINFOD_CACHE_PATH", path, 1) ? -errno : 0;
}

/* What the clients read from the environment, set before any starts. */
static int client_env(void)
{
	const char *v = getenv("DEBUGINFOD_MAXSIZE");
	char *end;
	char max[32];
	unsigned long long m = v && *v ? strtoull(v, &end, 10) : 0;
	int e;

	/* A smaller bound of the user's holds for the transfer and the copy alike. */
	keep_max = m && !*end && m < MAX_KEEP_BYTES ? m : MAX_KEEP_BYTES;
	snprintf(max, sizeof(max), "%llu", (unsigned long long)keep_max);
	if (setenv("DEBUGINFOD_MAXSIZE", max, 1))
		return -errno;
	if (geteuid() == 0 && (e = root_cache()))
		return e;
	return 0;
}

/*
 * While the clients run, no file of the process grows past keep_max: the
 * library writes what a server sends into its cache as it comes, checks
 * DEBUGINFOD_MAXSIZE against a Content-Length only, and calls our progress
 * callback once per pass of its loop, after however much one pass read.
 * A write past the bound fails (EFBIG; SIGXFSZ is ignored meanwhile), the
 * transfer with it (-EIO).  Nothing else writes files during the fetch.
 */
struct fsize_guard {
	struct rlimit rl;
	struct sigaction sa;
	bool set;
};

static void fsize_bound(struct fsize_guard *g)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	struct rlimit rl;

	g->set = false;
	if (getrlimit(RLIMIT_FSIZE, &g->rl))
		return;
	rl = g->rl;
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > keep_max)
		rl.rlim_cur = keep_max;
	if (sigaction(SIGXFSZ, &ign, &g->sa))
		return;
	if (setrlimit(RLIMIT_FSIZE, &rl)) {
		sigaction(SIGXFSZ, &g->sa, NULL);
		return;
	}
	g->set = true;
}

static void fsize_restore(struct fsize_guard *g)
{
	if (!g->set)
		return;
	setrlimit(RLIMIT_FSIZE, &g->rl);
	sigaction(SIGXFSZ, &g->sa, NULL);
	g->set = false;
}

static double env_seconds(const char *name)
{
	const char *v = getenv(name);
	char *end;
	double d;

	if (!v || !*v)
		return 0;
	d = strtod(v, &end);
	return *end || !(d > 0) ? 0 : d;
}

int debuginfo_fetch(const struct debuginfo_opts *o, const char *const *hex, size_t n, struct debuginfo_stats *st)
{
	struct fetcher f = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct fsize_guard guard;
	pthread_t tids[MAX_THREADS];
	int nthreads = 0, e = 0, env_err, want;
	double req = o->request_s > 0 ? o->request_s : env_seconds("DEBUGINFOD_TIMEOUT");
	double deadline = o->deadline_s > 0 ? o->deadline_s : DEFAULT_DEADLINE_S;
	bool shown = false;
	char secs[32];
	long last = -1;

	memset(st, 0, sizeof(*st));
	if (!debuginfo_enabled(o)) {
		no_network();
		return 0;
	}
	/* A cache that is not root's own is said (root_cache): nothing is fetched, all counted as failed. */
	env_err = client_env();
	if (env_err == -ENOMEM)
		return env_err;
	if (setenv("DEBUGINFOD_URLS", o->urls, 1))
		return -errno;
	if (!(req > 0))
		req = DEFAULT_REQUEST_S;
	/* The library's own timeout for a server that sends nothing: no longer than ours. */
	snprintf(secs, sizeof(secs), "%d", (int)ceil(req));
	setenv("DEBUGINFOD_TIMEOUT", secs, 1);
	f.jobs = calloc(n ? n : 1, sizeof(*f.jobs));
	if (!f.jobs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char p[PATH_MAX];

		/* Kept already (an earlier report): nothing to ask. */
		if (!debuginfo_path(hex[i], p, sizeof(p)))
			continue;
		f.jobs[f.n++].hex = hex[i];
	}
	st->wanted = f.n;
	if (env_err) {
		st->failed = f.n;
		free(f.jobs);
		no_network();
		return 0;
	}
	pthread_once(&dc_once, dc_init);
	if (!dc_ok)
		pr_warn("debuginfod: libdebuginfod.so.1 cannot be loaded: no debug file is fetched");
	f.start_ns = now_ns(CLOCK_MONOTONIC);
	f.request_ns = (__u64)(req * 1e9);
	f.deadline_ns = f.start_ns + (__u64)(deadline * 1e9);
	pr_debug("debuginfod: %zu debug files to fetch from %s, %d at a time, %.0f s per request, %.0f s in all",
		 f.n, getenv("DEBUGINFOD_URLS"), (int)SP_MIN(f.n, (size_t)(o->threads > 0 ? o->threads : MAX_THREADS)),
		 req, deadline);
	want = (int)SP_MIN(f.n, (size_t)(o->threads > 0 ? SP_MIN(o->threads, MAX_THREADS) : MAX_THREADS));
	fsize_bound(&guard);
	for (int i = 0; i < want; i++) {
		if (pthread_create(&tids[nthreads], NULL, worker_main, &f))
			break;
		nthreads++;
	}
	if (!nthreads && f.n)
		worker_main(&f); /* no thread to be had: one at a time, here */
	/* Wait, and after a second say how far it got, on a terminal only. */
	for (;;) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		unsigned done;
		double el;

		pthread_mutex_lock(&f.lock);
		done = f.done;
		pthread_mutex_unlock(&f.lock);
		if (done >= f.n)
			break;
		el = (now_ns(CLOCK_MONOTONIC) - f.start_ns) / 1e9;
		/* Redrawn when it changes: each job done, each second. */
		if (o->progress && el >= 1.0 && isatty(STDERR_FILENO) && sp_verbose >= 0 && last != (long)el * 100000 + done) {
			last = (long)el * 100000 + done;
			fprintf(stderr, "\r%s: debuginfod: %u of %zu debug files, %.0f s of %.0f s", sp_prog, done, f.n,
				el, deadline);
			shown = true;
		}
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	fsize_restore(&guard);
	if (shown)
		fprintf(stderr, "\r\033[K");
	for (size_t i = 0; i < f.n; i++) {
		switch (f.jobs[i].out) {
		case O_FETCHED: st->fetched++; break;
		case O_CACHED: st->cached++; break;
		case O_NOT_FOUND: st->not_found++; break;
		case O_UNREACHABLE: st->unreachable++; break;
		case O_TIMED_OUT: st->timed_out++; break;
		case O_REFUSED: st->refused++; break;
		default: st->failed++; break;
		}
	}
	st->seconds = (now_ns(CLOCK_MONOTONIC) - f.start_ns) / 1e9;
	free(f.jobs);
	no_network();
	return e;
}

void debuginfo_say(const struct debuginfo_opts *o, const struct debuginfo_stats *st)
{
	unsigned bad = st->not_found + st->unreachable + st->timed_out + st->refused + st->failed;

	if (!debuginfo_enabled(o) && !st->wanted)
		return;
	pr_debug("debuginfod: %u debug files wanted: %u fetched, %u from libdebuginfod's cache, %u not found, "
		 "%u servers unreachable, %u timed out, %u refused (another build id, or not ELF), %u failed; %.2f s",
		 st->wanted, st->fetched, st->cached, st->not_found, st->unreachable, st->timed_out, st->refused,
		 st->failed, st->seconds);
	if (bad)
		pr_warn("debuginfod: %u of %u debug files could not be had (%u unreachable, %u timed out, "
			"%u refused for another build id or not ELF, %u failed, %u not found); their frames stay unnamed",
			bad, st->wanted, st->unreachable, st->timed_out, st->refused, st->failed, st->not_found);
}

/*
 * fd (a debug file for build id hex) or, where its DWARF is compressed, the
 * inflated copy that libdw maps instead of inflating every section into the
 * heap (zdebug.h).  libdw keeps the name it is given for the file (a
 * relative .gnu_debugaltlink is found beside it), so only the descriptor
 * changes; the copy is read only if it carries the same build id and passes
 * the same bound.
 */
static int inflated(int fd, const char *hex)
{
	int z;

	if (check_build_id_fd(fd, hex) || (z = zdebug_open(fd, hex)) < 0)
		return fd;
	if (check_build_id_fd(z, hex) || elf_budget_vet(z, ELF_BUDGET_DWARF, hex)) {
		close(z);
		return fd;
	}
	close(fd);
	return z;
}

int debuginfo_inflated(int fd)
{
	__u8 id[BUILD_ID_MAX], size;
	char hex[2 * BUILD_ID_MAX + 1];

	if (buildid_from_fd(fd, id, &size))
		return fd;
	buildid_hex(id, size, hex);
	return inflated(fd, hex);
}

int debuginfo_dwfl_find(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	char hex[2 * BUILD_ID_MAX + 1], path[PATH_MAX];
	int n = dwfl_module_build_id(mod, &bits, &vaddr);
	bool id = n > 0 && n <= BUILD_ID_MAX;

	if (id) {
		buildid_hex(bits, n, hex);
		if (!debuginfo_path(hex, path, sizeof(path))) {
			int fd = open_regular(path);

			if (fd >= 0 && !elf_budget_vet(fd, ELF_BUDGET_DWARF, path)) {
				*debuginfo_file_name = strdup(path);
				return inflated(fd, hex);
			}
			if (fd >= 0)
				close(fd);
		}
	}
	/*
	 * libdw's own places (/usr/lib/debug, the debuglink beside the file):
	 * what it found there is bounded before it reads it, as the files
	 * handed to it are.
	 */
	n = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
					 debuginfo_file_name);
	if (n >= 0 && elf_budget_vet(n, ELF_BUDGET_DWARF, *debuginfo_file_name)) {
		close(n);
		free(*debuginfo_file_name);
		*debuginfo_file_name = NULL;
		return -1;
	}
	return n >= 0 && id ? inflated(n, hex) : n;
}
