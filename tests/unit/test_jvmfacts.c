// SPDX-License-Identifier: GPL-2.0
/*
 * jvmfacts against the real thing and against a liar: a live JVM of each
 * JDK on this machine (Debian's 17, Temurin's 25; one not installed is
 * skipped) read from its libjvm and its memory, checked against the figures
 * hotspot.md measured; then tables in this process's own memory that lie
 * (a stride too large, an offset past its stride or its type, no end, a
 * symbol outside libjvm, tables not set up) refused with the right errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "jvmfacts.h"
#include "jvmnames.h"

static int read_pid(void *ctx, __u64 addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(unsigned long)addr, len };
	ssize_t n;

	if (addr < 4096 || addr >= (1ull << 47))
		return -EFAULT;
	n = process_vm_readv((pid_t)(long)ctx, &local, 1, &remote, 1, 0);
	return n == (ssize_t)len ? 0 : -EFAULT;
}

/* pid's libjvm: its path, the lowest mapping of it (offset 0) and its span. */
static bool find_libjvm(pid_t pid, char *path, size_t n, __u64 *lo, __u64 *hi)
{
	char maps[64], line[512];
	FILE *f;

	*lo = ~0ull, *hi = 0;
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	if (!(f = fopen(maps, "r")))
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		char p[400] = "";

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %399s", &s, &e, &off, p) < 3)
			continue;
		if (strlen(p) < 10 || strcmp(p + strlen(p) - 10, "/libjvm.so"))
			continue;
		snprintf(path, n, "%s", p);
		if (s < *lo)
			*lo = s;
		if (e > *hi)
			*hi = e;
	}
	fclose(f);
	return *hi != 0;
}

static const char source[] = "public class Idle { public static void main(String[] a) throws Exception {"
			     " long n = 0; for (int i = 0; i < 600; i++) { for (int j = 0; j < 100000; j++) n += j;"
			     " Thread.sleep(100); } System.out.println(n); } }\n";

static int nr_blobs, nr_nmethods, nr_changed;
static __u32 max_hops;
/* PcDescs whose scopes read (and of them with inlined frames), refused; methods of scopes named, with lines. */
static int nr_scoped, nr_inlined, nr_refused, nr_named, nr_lines;

/*
 * Every PcDesc of nmethod b read as a pc's scopes (jvmnames.h), each chain's
 * methods named; a method's line table turned into lines of its bcis.
 */
static void scopes(const struct jvm_facts *f, pid_t pid, const struct jvm_blob *b)
{
	static struct jvm_method jm;
	void *ctx = (void *)(long)pid;
	__u64 n = (b->pcs_hi - b->pcs_lo) / f->o.pcdesc_size;

	assert_true(b->pcs_lo && b->data_lo && b->meta_lo);
	for (__u64 i = 1; i < n && i < 64; i++) {
		struct jvm_scope s[JVM_MAX_SCOPES];
		__s32 pc;
		int k;

		if (read_pid(ctx, b->pcs_lo + i * f->o.pcdesc_size + f->o.pcdesc_pc, &pc, 4) || pc < 0 ||
		    b->code_begin + pc >= b->code_end)
			continue;
		k = jvm_pc_scopes(f, read_pid, ctx, b, b->code_begin + pc, s, JVM_MAX_SCOPES);
		if (k < 1) {
			nr_refused++;
			continue;
		}
		nr_scoped++;
		nr_inlined += k > 1;
		if (nr_named >= 200)
			continue;
		for (int j = 0; j < k; j++) {
			if (jvm_method_read(f, read_pid, ctx, s[j].method, &jm))
				continue;
			nr_named++;
			assert_true(s[j].bci >= -2 && s[j].bci < (__s32)jm.code_size);
			if (jm.lines.len) {
				nr_lines++;
				assert_non_null(strstr(jm.file, ".java"));
				assert_true(jm.firstline > 0);
			}
		}
	}
	jvm_method_clear(&jm);
}

/*
 * The blobs of a JVM compiling (javac's own run, in source mode): the call
 * stub's and the interpreter's named as they are, then every blob of every
 * heap found from its own pcs, nmethods with their identity.
 */
static void blobs(const struct jvm_facts *f, pid_t pid)
{
	void *ctx = (void *)(long)pid;
	struct jvm_blob b, last;

	nanosleep(&(struct timespec){ 1, 0 }, NULL);
	assert_int_equal(jvm_blob_at(f, read_pid, ctx, f->call_stub_ret, &b), 0);
	assert_non_null(strstr(b.name, "StubRoutines"));
	assert_false(b.nmethod);
	assert_int_equal(jvm_blob_at(f, read_pid, ctx, f->interp_lo + 64, &b), 0);
	assert_string_equal(b.name, "Interpreter");
	nr_blobs = nr_nmethods = nr_changed = 0;
	max_hops = 0;
	for (__u32 i = 0; i < f->nr_heaps; i++)
		printf("heap %u: [%#llx, %#llx) of [%#llx, %#llx)\n", i, (unsigned long long)f->heap[i].low,
		       (unsigned long long)f->heap[i].high, (unsigned long long)f->heap[i].low_boundary,
		       (unsigned long long)f->heap[i].high_boundary);
	for (__u32 i = 0; i < f->nr_heaps; i++) {
		__u64 seg = 1ull << f->heap[i].log2_seg, pc = f->heap[i].low;

		while (pc < f->heap[i].high) {
			int err = jvm_blob_at(f, read_pid, ctx, pc, &b);

			if (err) {
				/* A free block, or one that changed under us (this JVM is compiling). */
				assert_true(err == -ENOENT || err == -EBADMSG || err == -ELOOP);
				pc += seg;
				continue;
			}
			/* The blob's last byte: the most hops back to its start. */
			if (!jvm_blob_at(f, read_pid, ctx, b.addr + b.size - 1, &last) && last.hops > max_hops)
				max_hops = last.hops;
			nr_blobs++;
			if (b.nmethod && !(b.compile_id > 0 && b.method)) {
				/*
				 * Being installed or freed as we read it (this JVM is
				 * compiling; seen once beside a busy host's load): read
				 * again, it is whole or gone, and few are caught so.
				 */
				nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
				if (jvm_blob_at(f, read_pid, ctx, pc, &b) || !b.nmethod ||
				    !(b.compile_id > 0 && b.method)) {
					nr_changed++;
					pc += seg;
					continue;
				}
			}
			if (b.nmethod) {
				nr_nmethods++;
				assert_true(b.compile_id > 0 && b.method);
				assert_true(b.code_begin > b.addr && b.code_end <= b.addr + b.size);
				/* A native method's wrapper has no PcDescs past the sentinels. */
				if (strcmp(b.name, "native nmethod"))
					scopes(f, pid, &b);
			}
			pc = (b.addr + b.size + seg - 1) & ~(seg - 1);
		}
	}
	printf("%d blobs, %d nmethods (%d changed as read), at most %u hops; scopes of %d PcDescs read (%d inlined), %d refused; %d methods named, %d with lines\n",
	       nr_blobs, nr_nmethods, nr_changed, max_hops, nr_scoped, nr_inlined, nr_refused, nr_named, nr_lines);
}

struct want {
	const char *java;
	__u32 major, heapblock, cb_name, cb_frame_size, nm_compile_id, cmethod_size;
	bool i16;
	int kind_nmethod;
};

static void live(const struct want *w)
{
	char dir[] = "/tmp/sp_jvmfactsXXXXXX", file[64], path[400], why[200] = "";
	struct jvm_binary bin;
	struct jvm_facts f;
	__u64 lo, hi;

	nr_blobs = nr_nmethods = 0;
	nr_scoped = nr_inlined = nr_refused = nr_named = nr_lines = 0;
	int fd, err = -EAGAIN, status;
	pid_t pid;

	if (access(w->java, X_OK)) {
		printf("SKIP: %s is not installed here\n", w->java);
		return;
	}
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/Idle.java", dir);
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, source, sizeof(source) - 1), (ssize_t)sizeof(source) - 1);
	close(fd);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		execl(w->java, "java", "-Xshare:auto", file, (char *)NULL);
		_exit(127);
	}
	/* A loaded 2-CPU host: libjvm maps at once, the code cache comes some 100s of ms later. */
	for (int i = 0; i < 600 && err == -EAGAIN; i++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		if (!find_libjvm(pid, path, sizeof(path), &lo, &hi))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(jvm_binary_read(fd, &bin), 0);
		close(fd);
		err = jvm_facts_read(&bin, lo - bin.load_base, read_pid, (void *)(long)pid, &f, why, sizeof(why));
	}
	/* javac's run in source mode compiles hundreds of methods: a loaded host may take seconds to start. */
	for (int i = 0; !err && i < 20 && !nr_nmethods; i++)
		blobs(&f, pid);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	unlink(file);
	rmdir(dir);
	if (err)
		printf("%s: %d %s\n", w->java, err, why);
	assert_int_equal(err, 0);
	assert_true(nr_blobs > 100);
	assert_true(nr_nmethods > 0);
	assert_true(nr_changed <= 1 + nr_nmethods / 20);
	assert_true(max_hops <= JVM_MAX_HOPS);
	/* javac's compiled methods inline (C1 and C2 alike); a method it runs has its lines. */
	assert_true(nr_scoped > 0 && nr_inlined > 0 && nr_lines > 0);
	/* Refused only where the JVM freed or reused an nmethod under the reads (it is compiling). */
	assert_true(nr_refused * 20 <= nr_scoped);
	printf("JDK %u.%u.%u+%u (%s): %u structs %u types %u ints, %u heaps, code cache [%#llx, %#llx)\n", f.major,
	       f.minor, f.security, f.build, f.release, f.nr_structs, f.nr_types, f.nr_ints, f.nr_heaps,
	       (unsigned long long)f.cc_low, (unsigned long long)f.cc_high);
	assert_int_equal(f.major, w->major);
	assert_int_equal(f.nr_heaps, 3);
	for (__u32 i = 0; i < f.nr_heaps; i++)
		assert_int_equal(f.heap[i].log2_seg, 7);
	assert_int_equal(f.o.heapblock_size, w->heapblock);
	assert_int_equal(f.o.cb_name, w->cb_name);
	assert_int_equal(f.o.cb_frame_size, w->cb_frame_size);
	assert_int_equal(f.o.nm_compile_id, w->nm_compile_id);
	assert_int_equal(f.o.cmethod_size, w->cmethod_size);
	assert_int_equal(f.o.frame_complete_i16, w->i16);
	assert_int_equal(f.kind_nmethod, w->kind_nmethod);
	assert_int_equal(f.o.pcdesc_size, 16);
	/* The debug information's layout and stream encoding (jvmfacts.h), as HotSpot's nmethod.hpp of each. */
	assert_int_equal(f.scopes, w->major >= 25 ? JVM_SCOPES_IMMUTABLE : JVM_SCOPES_HEADER);
	assert_int_equal(f.u5_excess, w->major >= 21);
	assert_int_equal(f.lnt_flag, 1);
	assert_int_equal(f.o.symbol_body, 6);
	assert_true(jvm_in_code_cache(&f, f.call_stub_ret));
	assert_true(jvm_in_code_cache(&f, f.interp_lo));
	assert_true(f.interp_hi > f.interp_lo);
}

static void test_jdk17(void **state)
{
	static const struct want w = { "/usr/lib/jvm/java-17-openjdk-amd64/bin/java", 17, 16, 96, 28, 304, 48, false,
				       -1 };
	(void)state;
	live(&w);
}

static void test_jdk25(void **state)
{
	static const struct want w = { "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java", 25, 8, 8, 44, 212, 56, true, 1 };
	(void)state;
	live(&w);
}

static void test_not_jvm(void **state)
{
	struct jvm_binary b;
	int fd = open("/bin/true", O_RDONLY | O_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(jvm_binary_read(fd, &b), -ENOENT);
	close(fd);
	fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(jvm_binary_read(fd, &b), -EINVAL);
	close(fd);
}

/*
 * A liar in this process's own memory: the layout globals, three tables
 * and their strings in one block that stands for libjvm.
 */
#define ROWS 4096
static struct fake {
	__u64 g[JS_MAX];
	__u64 structs[ROWS][6], types[4][2], ints[4][2];
	char names[4][32];
} fk;

static struct jvm_binary fake_bin(void)
{
	struct jvm_binary b = { .lo = (__u64)(unsigned long)&fk, .hi = (__u64)(unsigned long)&fk + sizeof(fk) };

	for (int k = 0; k < JS_MAX; k++)
		b.sym[k] = (__u64)(unsigned long)&fk.g[k];
	fk.g[JS_STRUCTS] = (__u64)(unsigned long)fk.structs;
	fk.g[JS_TYPES] = (__u64)(unsigned long)fk.types;
	fk.g[JS_INTS] = (__u64)(unsigned long)fk.ints;
	fk.g[JS_S_STRIDE] = 48;
	for (int k = 0; k < 6; k++)
		fk.g[JS_S_TYPE + k] = 8 * k;
	fk.g[JS_T_STRIDE] = 16, fk.g[JS_T_NAME] = 0, fk.g[JS_T_SIZE] = 8;
	fk.g[JS_I_STRIDE] = 16, fk.g[JS_I_NAME] = 0, fk.g[JS_I_VALUE] = 8;
	memset(fk.structs, 0, sizeof(fk.structs));
	memset(fk.types, 0, sizeof(fk.types));
	memset(fk.ints, 0, sizeof(fk.ints));
	strcpy(fk.names[0], "CodeBlob");
	strcpy(fk.names[1], "_name");
	strcpy(fk.names[2], "Other");
	return b;
}

static int fake_read(struct jvm_binary *b, char *why, size_t n)
{
	struct jvm_facts f;
	return jvm_facts_read(b, 0, read_pid, (void *)(long)getpid(), &f, why, n);
}

static void test_liar(void **state)
{
	struct jvm_binary b;
	char why[200];

	(void)state;
	/* Tables not set up: come back later. */
	b = fake_bin();
	fk.g[JS_STRUCTS] = 0;
	assert_int_equal(fake_read(&b, why, sizeof(why)), -EAGAIN);
	/* A stride past the bound, and an entry's field past its stride. */
	b = fake_bin();
	fk.g[JS_S_STRIDE] = 100000;
	assert_int_equal(fake_read(&b, why, sizeof(why)), -EBADMSG);
	b = fake_bin();
	fk.g[JS_T_SIZE] = 12;
	assert_int_equal(fake_read(&b, why, sizeof(why)), -EBADMSG);
	/* A symbol outside libjvm. */
	b = fake_bin();
	b.sym[JS_I_STRIDE] = 4096;
	assert_int_equal(fake_read(&b, why, sizeof(why)), -EBADMSG);
	assert_non_null(strstr(why, "outside libjvm"));
	/* A field at an offset past its type's size. */
	b = fake_bin();
	fk.types[0][0] = (__u64)(unsigned long)fk.names[0], fk.types[0][1] = 64;
	fk.structs[0][0] = (__u64)(unsigned long)fk.names[0];
	fk.structs[0][1] = (__u64)(unsigned long)fk.names[1];
	fk.structs[0][4] = 4096;
	assert_int_equal(fake_read(&b, why, sizeof(why)), -EBADMSG);
	assert_non_null(strstr(why, "past the type's size"));
	/* No end within the bound: 65536 rows of 16 bytes, each naming a type. */
	b = fake_bin();
	{
		size_t rows = 65536 + 16;
		__u64 *big = malloc(rows * 16);

		assert_non_null(big);
		for (size_t i = 0; i < rows * 2; i++)
			big[i] = (__u64)(unsigned long)fk.names[2];
		fk.g[JS_STRUCTS] = (__u64)(unsigned long)big;
		fk.g[JS_S_STRIDE] = 16;
		for (int k = 0; k < 6; k++)
			fk.g[JS_S_TYPE + k] = 0;
		assert_int_equal(fake_read(&b, why, sizeof(why)), -EBADMSG);
		assert_non_null(strstr(why, "without its end"));
		free(big);
	}
	/* Every table well formed but no fields: not a JVM the walk can read. */
	b = fake_bin();
	assert_int_equal(fake_read(&b, why, sizeof(why)), -EBADMSG);
	assert_non_null(strstr(why, "no CodeBlob::"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_jvm),
		cmocka_unit_test(test_liar),
		cmocka_unit_test(test_jdk17),
		cmocka_unit_test(test_jdk25),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
