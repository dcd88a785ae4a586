// SPDX-License-Identifier: GPL-2.0
/* The symbolizer on fixtures: this test binary's own functions, a kallsyms text. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "unit.h"

#include "buildid.h"
#include "kallsyms.h"
#include "map_guard.h"
#include "profile.h"
#include "sideband.h"
#include "elf_syms.h"
#include "symbols.h"

__attribute__((noinline)) int fixture_function_alpha(int x)
{
	return x * 3 + 1;
}

/*
 * A label in .text, as hand-written assembly leaves its entry points
 * (NOTYPE, size 0): perf 6.1 names code by it, so must we.  And a data
 * object, which perf reads too but which is no function to find by name.
 */
__asm__(".text\n"
	".globl fixture_label_entry\n"
	"fixture_label_entry:\n"
	"	nop\n"
	"	nop\n"
	"	ret\n");
extern char fixture_label_entry[];
int fixture_data_object[16] = { 1 };

/*
 * The process timeline: a child forked at t=10 resolves through its
 * parent's maps; a parent that had no maps at its fork passes none on; an
 * exec at t=20 starts a new epoch but keeps the old maps where no new one
 * overlaps (as perf does); pid 77 reused at t=30 by another fork starts
 * afresh from its new parent.
 */
static void test_fork_exec_timeline(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL, NULL);
	__u64 ip = (__u64)(uintptr_t)fixture_function_alpha + 2;
	struct sym out;
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	struct procmap m;

	(void)state;
	assert_non_null(s);
	assert_non_null(f);
	/* Parent 1234 has our maps from t=1; 999 has them only from t=15. */
	while (fgets(line, sizeof(line), f))
		if (!procmaps_parse_line(line, &m) && (m.prot & 4)) {
			assert_int_equal(symbolizer__add_map(s, 1234, m.start, m.end - m.start, m.pgoff, m.path, 1, false, NULL), 0);
			assert_int_equal(symbolizer__add_map(s, 999, m.start, m.end - m.start, m.pgoff, m.path, 15, false, NULL), 0);
		}
	fclose(f);
	assert_int_equal(symbolizer__fork(s, 1234, 77, 10), 0);
	assert_int_equal(symbolizer__fork(s, 1234, 1234, 11), 0); /* a thread: nothing changes */
	assert_int_equal(symbolizer__exec(s, 77, 20), 0);
	assert_int_equal(symbolizer__fork(s, 999, 78, 12), 0);	 /* before 999 had the maps */
	assert_int_equal(symbolizer__fork(s, 999, 77, 30), 0);	 /* pid 77 again */

	symbolizer__resolve(s, 77, ip, 5, false, &out); /* before the fork: not this process yet */
	assert_false(out.known);
	symbolizer__resolve(s, 77, ip, 15, false, &out);
	assert_true(out.known);
	assert_string_equal(out.name, "fixture_function_alpha");
	symbolizer__resolve(s, 1234, ip, 15, false, &out);
	assert_true(out.known);
	symbolizer__resolve(s, 77, ip, 25, false, &out); /* after the exec, before a new map covers ip */
	assert_true(out.known);
	symbolizer__resolve(s, 78, ip, 40, false, &out); /* its parent mapped nothing by the fork */
	assert_false(out.known);
	symbolizer__resolve(s, 77, ip, 31, false, &out); /* the new process under pid 77 */
	assert_true(out.known);
	assert_true(symbolizer__epoch(s, 77, 31) == 30);
	assert_true(symbolizer__epoch(s, 77, 25) == 20);
	assert_true(symbolizer__epoch(s, 1234, 25) == 0);
	symbolizer__free(s);
}

static void test_resolve_self(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL, NULL);
	struct sym out;
	__u64 ip = (__u64)(uintptr_t)fixture_function_alpha + 2;

	(void)state;
	assert_non_null(s);
	unit_self_maps(s, 1234, 0);
	symbolizer__resolve(s, 1234, ip, 1, false, &out);
	assert_true(out.known);
	assert_string_equal(out.name, "fixture_function_alpha");
	assert_int_equal(out.offset, 2);
	assert_string_equal(out.dso, "test_symbols");
	/* a label names the code after it, not the function before */
	symbolizer__resolve(s, 1234, (__u64)(uintptr_t)fixture_label_entry + 1, 1, false, &out);
	assert_true(out.known);
	assert_string_equal(out.name, "fixture_label_entry");
	assert_int_equal(out.offset, 1);
	/* libc through the same maps */
	symbolizer__resolve(s, 1234, (__u64)(uintptr_t)fopen + 1, 1, false, &out);
	assert_true(out.known);
	assert_non_null(strstr(out.name, "fopen"));
	/* nothing mapped there, or no such process */
	symbolizer__resolve(s, 1234, 0x10, 1, false, &out);
	assert_false(out.known);
	assert_string_equal(out.name, "[unknown]");
	assert_string_equal(out.dso, "[unknown]");
	symbolizer__resolve(s, 999999, ip, 1, false, &out);
	assert_false(out.known);
	symbolizer__free(s);
}

/*
 * A file's names point into its mapped string table, not into copies: they
 * read the same after the table's pages are let go, and a file cut short
 * under the table reads as empty names, not SIGBUS.
 */
static void test_names_from_the_mapped_string_table(void **state)
{
	char dir[] = "/tmp/sp-elf-names-XXXXXX", path[64], cmd[160];
	struct elf_syms t = {};
	struct elf_sym *sym;
	__u64 alpha;
	int fd;

	(void)state;
	assert_int_equal(elf_syms__load_file(&t, "/proc/self/exe", true, false), 0);
	assert_non_null(t.strs_map);
	assert_int_equal(elf_find_function("/proc/self/exe", "fixture_function_alpha", &alpha, NULL, 0), 0);
	sym = elf_syms__find(&t, elf_syms__to_vaddr(&t, alpha));
	assert_non_null(sym);
	assert_true(sym->name >= (char *)t.strs_map && sym->name < (char *)t.strs_map + t.strs_len);
	elf_syms__drop_pages(&t);
	assert_string_equal(elf_sym__name(sym), "fixture_function_alpha");
	elf_syms__clear(&t);

	/* A copy, cut to nothing once loaded: its names read as zeros under the map guard. */
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/copy", dir);
	snprintf(cmd, sizeof(cmd), "cp /proc/%d/exe %s", getpid(), path);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(elf_syms__load_file(&t, path, true, false), 0);
	assert_non_null(t.strs_map);
	sym = elf_syms__find(&t, elf_syms__to_vaddr(&t, alpha));
	assert_non_null(sym);
	/* cmocka sets its own SIGBUS handler around each test, over the guard the first mapping installed. */
	assert_int_equal(map_guard__install(), 0);
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	close(fd);
	elf_syms__drop_pages(&t);
	assert_string_equal(sym->name, "");
	elf_syms__clear(&t);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_build_id_mismatch(void **state)
{
	struct pd_build_id wrong = { .pid = -1, .misc = 2, .size = 20 };
	struct pd_meta meta = { .build_ids = &wrong, .nr_build_ids = 1 };
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	struct symbolizer *s;
	struct sym out;

	(void)state;
	assert_true(n > 0);
	self[n] = 0;
	wrong.filename = self;
	memset(wrong.id, 0xab, 20); /* not this binary's id */
	s = symbolizer__new(&meta, NULL);
	unit_self_maps(s, 1234, 0);
	symbolizer__resolve(s, 1234, (__u64)(uintptr_t)fixture_function_alpha, 1, false, &out);
	assert_false(out.known);
	assert_string_equal(out.name, "[unknown]");
	assert_string_equal(out.dso, "test_symbols"); /* the dso is still named */
	symbolizer__free(s);
	/* With the right id, it resolves. */
	assert_int_equal(buildid_from_file(self, wrong.id, &wrong.size), 0);
	s = symbolizer__new(&meta, NULL);
	unit_self_maps(s, 1234, 0);
	symbolizer__resolve(s, 1234, (__u64)(uintptr_t)fixture_function_alpha, 1, false, &out);
	assert_string_equal(out.name, "fixture_function_alpha");
	symbolizer__free(s);
}

static void test_find_function(void **state)
{
	__u64 off;

	(void)state;
	assert_int_equal(elf_find_function("/proc/self/exe", "fixture_function_alpha", &off, NULL, 0), 0);
	assert_true(off > 0);
	assert_int_equal(elf_find_function("/proc/self/exe", "no_such_function_here", &off, NULL, 0), -ENOENT);
	/* read for perf's sake, but a variable is no place for a uprobe */
	assert_int_equal(elf_find_function("/proc/self/exe", "fixture_data_object", &off, NULL, 0), -ENOENT);
	fixture_data_object[1] = fixture_data_object[0]; /* referenced, so kept */
	assert_int_equal(elf_find_function("/etc/hostname", "x", &off, NULL, 0), -ENOEXEC);
	assert_true(elf_syms_count("/proc/self/exe") > 10);
}

struct got {
	int n;
	__u64 last;
	char names[4][32];
};

static int collect(void *ctx, __u64 addr, char type, const char *name, size_t n)
{
	struct got *g = ctx;

	(void)type;
	if (g->n < 4)
		snprintf(g->names[g->n], 32, "%.*s", (int)n, name);
	g->n++;
	g->last = addr;
	return 0;
}

static void test_kallsyms_text(void **state)
{
	const char text[] = "ffffffff81000000 T _text\n"
			    "ffffffff81000010 t helper\n"
			    "garbage line\n"
			    "ffffffffc0001000 t mod_func\t[mymod]\n"
			    "ffffffff82000000 T _etext\n";
	struct got g = {};
	__u64 a, b;

	(void)state;
	assert_int_equal(kallsyms_text_range(text, strlen(text), &a, &b), 0);
	assert_int_equal(a, 0xffffffff81000000ull);
	assert_int_equal(b, 0xffffffff82000000ull);
	kallsyms_parse(text, strlen(text), collect, &g);
	assert_int_equal(g.n, 4);
	assert_string_equal(g.names[2], "mod_func");
	assert_int_equal(kallsyms_text_range("0000000000000000 T _text\n", 25, &a, &b), -EPERM);
	/* Found by the two lines alone, whatever their order; a module's _text or a longer name is not one. */
	{
		const char moved[] = "ffffffffc0002000 t _text\t[evil]\n"
				     "ffffffff81000020 t __etext\n"
				     "ffffffff82000000 T _etext\n"
				     "ffffffff81000000 T _text\n";
		/* No newline after _etext: the whole parse finds it. */
		const char last[] = "ffffffff81000000 T _text\nffffffff82000000 T _etext";

		assert_int_equal(kallsyms_text_range(moved, strlen(moved), &a, &b), 0);
		assert_int_equal(a, 0xffffffff81000000ull);
		assert_int_equal(b, 0xffffffff82000000ull);
		assert_int_equal(kallsyms_text_range(last, strlen(last), &a, &b), 0);
		assert_int_equal(b, 0xffffffff82000000ull);
	}
}

/* A fixture root: a fresh dir holding dir/sub/name with text; path gets the file's path. */
static void fixture_root(char *dir, const char *sub, const char *name, const char *text, char *path, size_t len)
{
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, len, "%s/%s", dir, sub);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, len, "%s/%s/%s", dir, sub, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void fixture_root_remove(const char *dir, const char *sub, const char *path)
{
	char d[64];

	unlink(path);
	snprintf(d, sizeof(d), "%s/%s", dir, sub);
	rmdir(d);
	rmdir(dir);
}

struct lazy_load {
	struct elf_syms *t;
	char *text;
	__u32 offs[8];
};

/* As the report loads them: each name cut in the text itself and referred to, until let go. */
static int lazy_add(void *ctx, __u64 addr, char type, const char *name, size_t n)
{
	struct lazy_load *l = ctx;
	char *at = l->text + (name - l->text);

	(void)type;
	l->offs[l->t->nr_syms] = name - l->text;
	at[n] = 0;
	return elf_syms__add_ref(l->t, addr, 0, at, STB_GLOBAL);
}

/*
 * A kallsyms table whose names are let go once finished: each reads back
 * from the file when asked (cut at its tab), the alias kept is the one the
 * whole names chose (the last listed, __pi_memcpy), and its bounds stay.
 */
static void test_kallsyms_names_read_back_from_the_file(void **state)
{
	char text[] = "ffffffff81000000 T memcpy\n"
	      "ffffffff81000000 T __memcpy\n"
	      "ffffffff81000000 T __pi_memcpy\n"
	      "ffffffff81000040 t helper\n"
	      "ffffffffc0001000 t mod_func\t[mymod]\n";
	char dir[] = "/tmp/sp-ksyms-XXXXXX", path[64];
	struct elf_syms t = {};
	struct lazy_load l = { .t = &t, .text = text };
	struct elf_sym *sym;
	FILE *f;
	int fd;

	(void)state;
	fixture_root(dir, "k", "kallsyms", text, path, sizeof(path));
	kallsyms_parse(text, strlen(text), lazy_add, &l);
	elf_syms__finish(&t);
	assert_int_equal(t.nr_syms, 3);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(elf_syms__names_from_file(&t, fd, l.offs), 0);
	assert_null(t.names);
	sym = elf_syms__find(&t, 0xffffffff81000010ull);
	assert_non_null(sym);
	assert_null(sym->name);
	assert_string_equal(elf_syms__name(&t, sym), "__pi_memcpy");
	assert_int_equal(sym->end, 0xffffffff81000040ull);
	/* Asked again: the copy it read, not the file. */
	assert_string_equal(elf_syms__name(&t, sym), "__pi_memcpy");
	sym = elf_syms__find(&t, 0xffffffffc0001000ull);
	assert_non_null(sym);
	assert_string_equal(elf_syms__name(&t, sym), "mod_func");
	/* A file cut short since: no name, not a wrong one. */
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	sym = elf_syms__find(&t, 0xffffffff81000040ull);
	assert_non_null(sym);
	assert_string_equal(elf_syms__name(&t, sym), "[unknown]");
	elf_syms__clear(&t);
	fixture_root_remove(dir, "k", path);
}

/* Module frames: kallsyms names them, the module's MMAP gives them their module, as perf shows them. */
static void test_module_frames(void **state)
{
	const char text[] = "ffffffff81000000 T _text\n"
			    "ffffffff81000010 t helper\n"
			    "ffffffff82000000 T _etext\n"
			    "ffffffffc0001000 t mod_func\t[mymod]\n"
			    "ffffffffc0005000 t other_func\t[my_mod2]\n";
	char dir[] = "/tmp/spanperf-symXXXXXX", path[64];
	struct symbolizer *s;
	struct kmodule km;
	struct sym out;

	(void)state;
	fixture_root(dir, "proc", "kallsyms", text, path, sizeof(path));
	s = symbolizer__new(NULL, &(struct symbolizer_opts){ .root = dir });
	assert_non_null(s);
	assert_int_equal(symbolizer__add_map(s, -1, 0xffffffff81000000ull, 0x1000000, 0xffffffff81000000ull,
					     "[kernel.kallsyms]_text", 0, true, NULL), 0);
	assert_int_equal(symbolizer__add_map(s, -1, 0xffffffffc0001000ull, 0x1000, 0, "[mymod]", 0, true, NULL), 0);
	/* perf writes the module's path when it finds the .ko */
	assert_int_equal(symbolizer__add_map(s, -1, 0xffffffffc0005000ull, 0x1000, 0,
					     "/lib/modules/6.1.0/kernel/drivers/my-mod2.ko.xz", 0, true, NULL), 0);
	symbolizer__resolve(s, 99, 0xffffffffc0001004ull, 1, true, &out);
	assert_true(out.known);
	assert_string_equal(out.name, "mod_func");
	assert_string_equal(out.dso, "[mymod]");
	symbolizer__resolve(s, 99, 0xffffffffc0005008ull, 1, true, &out);
	assert_string_equal(out.name, "other_func");
	assert_string_equal(out.dso, "[my_mod2]");
	symbolizer__resolve(s, 99, 0xffffffff81000014ull, 1, true, &out);
	assert_string_equal(out.name, "helper");
	assert_string_equal(out.dso, "[kernel.kallsyms]");
	symbolizer__free(s);
	fixture_root_remove(dir, "proc", path);

	assert_int_equal(kmodule_parse_line("brd 16384 0 - Live 0xffffffffc0a00000\n", &km), 0);
	assert_string_equal(km.name, "brd");
	assert_int_equal(km.start, 0xffffffffc0a00000ull);
	assert_int_equal(km.size, 16384);
	assert_int_equal(kmodule_parse_line("nf_nat 61440 2 nft_chain_nat,xt_MASQUERADE, Live 0xffffffffc0b00000 (E)\n",
					    &km), 0);
	assert_string_equal(km.name, "nf_nat");
	/* Being loaded, or an address hidden by kptr_restrict: nothing to map. */
	assert_int_equal(kmodule_parse_line("brd 16384 0 - Loading 0xffffffffc0a00000\n", &km), -EINVAL);
	assert_int_equal(kmodule_parse_line("brd 16384 0 - Live 0x0000000000000000\n", &km), -EINVAL);
	assert_int_equal(kmodule_parse_line("garbage\n", &km), -EINVAL);
}

/* A JIT's frame named from root's /tmp/perf-PID.map, by a symbolizer that may read that owner's file. */
static bool jit_named(const char *root, bool any_owner)
{
	struct symbolizer *s = symbolizer__new(NULL, &(struct symbolizer_opts){ .root = root,
										 .any_perf_map_owner = any_owner });
	struct sym out;
	bool named;

	assert_non_null(s);
	assert_int_equal(symbolizer__add_map(s, 4242, 0x7f0000000000ull, 0x10000, 0, "//anon", 0, false, NULL), 0);
	symbolizer__resolve(s, 4242, 0x7f0000001004ull, 1, false, &out);
	named = out.known && !strcmp(out.name, "jitted_fn");
	symbolizer__free(s);
	return named;
}

/*
 * perf's rule for /tmp/perf-PID.map: another user's file names nothing
 * unless asked (report --force), and the asking is the one symbolizer's.
 */
static void test_perf_map_owner(void **state)
{
	char dir[] = "/tmp/spanperf-symXXXXXX", path[64];

	(void)state;
	if (geteuid() != 0)
		skip();
	fixture_root(dir, "tmp", "perf-4242.map", "7f0000001000 10 jitted_fn\n", path, sizeof(path));
	assert_true(jit_named(dir, false));
	assert_int_equal(chown(path, 12345, 12345), 0);
	assert_false(jit_named(dir, false));
	assert_true(jit_named(dir, true));
	assert_false(jit_named(dir, false));
	fixture_root_remove(dir, "tmp", path);
}

/* A frame no symbol covers is named by its address as perf report's sym column prints it. */
static void test_unknown_frames_print_as_perf(void **state)
{
	struct pfunc f = { .name = "[unknown]" };
	char buf[32];

	(void)state;
	assert_string_equal(pfunc_sym(&f, buf, sizeof(buf)), "[unknown]");
	f.unknown_addr = 0x4a26;
	assert_string_equal(pfunc_sym(&f, buf, sizeof(buf)), "0x0000000000004a26");
	/* perf's "%#llx" adds no 0x to zero: a sample with no frame at all. */
	f.unknown_addr = PFUNC_UNKNOWN_AT_ZERO;
	assert_string_equal(pfunc_sym(&f, buf, sizeof(buf)), "0000000000000000");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve_self),
		cmocka_unit_test(test_names_from_the_mapped_string_table),
		cmocka_unit_test(test_perf_map_owner),
		cmocka_unit_test(test_unknown_frames_print_as_perf),
		cmocka_unit_test(test_fork_exec_timeline),
		cmocka_unit_test(test_build_id_mismatch),
		cmocka_unit_test(test_find_function),
		cmocka_unit_test(test_kallsyms_text),
		cmocka_unit_test(test_kallsyms_names_read_back_from_the_file),
		cmocka_unit_test(test_module_frames),
	};

	return cmocka_run_group_tests_name("symbols", tests, NULL, NULL);
}
