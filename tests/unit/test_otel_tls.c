// SPDX-License-Identifier: GPL-2.0
/*
 * otel_tls: binaries built now, with each TLS model, publish
 * otel_thread_ctx_v1; the recipe worked out from outside must land on the
 * address the program itself reports (&otel_thread_ctx_v1 - fsbase).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "otel_tls.h"
#include "unit.h"

static char dir[] = "/tmp/sp-otel-tls-XXXXXX";
static char inc[4096];

/* The program prints its fsbase and the variable's address, then waits for stdin to close. */
static const char prog_src[] =
	"#include <stdio.h>\n"
	"#include <dlfcn.h>\n"
	"#ifdef IN_EXE\n#define OTEL_THREAD_CTX_DEFINE\n#include \"otel_thread_ctx.h\"\n"
	"static void *var_addr(void) { otel_thread_ctx_v1 = (void *)0x1234; return &otel_thread_ctx_v1; }\n"
	"#elif defined(DLOPEN)\n"
	"static void *var_addr(void) { void *h = dlopen(DLOPEN, RTLD_NOW); void *(*f)(void) = h ? (void *(*)(void))dlsym(h, \"lib_addr\") : 0; return f ? f() : 0; }\n"
	"#else\nvoid *lib_addr(void);\nstatic void *var_addr(void) { return lib_addr(); }\n#endif\n"
	"int main(void) { unsigned long fs; char c;\n"
	"  __asm__ volatile(\"mov %%fs:0, %0\" : \"=r\"(fs));\n"
	"  printf(\"%lx %lx\\n\", fs, (unsigned long)var_addr()); fflush(stdout);\n"
	"  return fread(&c, 1, 1, stdin) ? 1 : 0; }\n";

static const char lib_src[] =
	"#define OTEL_THREAD_CTX_DEFINE\n#include \"otel_thread_ctx.h\"\n"
	"void *lib_addr(void) { otel_thread_ctx_v1 = (void *)0x1234; return &otel_thread_ctx_v1; }\n";

/* Defines it but never uses it: no relocation reaches it, no model to follow. */
static const char unused_src[] = "#define OTEL_THREAD_CTX_DEFINE\n#include \"otel_thread_ctx.h\"\n"
				 "void *lib_addr(void) { return 0; }\n";

/* Exports the name as a plain global: one per process, so no thread context to read. */
static const char notls_src[] = "void *otel_thread_ctx_v1;\n"
				"void *lib_addr(void) { otel_thread_ctx_v1 = (void *)0x1234; return 0; }\n";

static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir) || !getcwd(inc, sizeof(inc) - 16))
		return -1;
	strcat(inc, "/include");
	unit_write_file(dir, "prog.c", prog_src);
	unit_write_file(dir, "lib.c", lib_src);
	unit_write_file(dir, "unused.c", unused_src);
	unit_write_file(dir, "notls.c", notls_src);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return sh("rm -rf %s", dir);
}

/* Builds the library (if lib_flags) and the program, runs it, checks the recipe. */
static void check(const char *name, const char *lib_flags, const char *prog_flags, enum otel_tls_model want_model,
		  int want_err)
{
	int in[2], out[2];
	char line[128] = "";
	unsigned long fs = 0, addr = 0;
	struct sp_otel_recipe r = { 0 };
	enum otel_tls_model model;
	__u64 got = 0;
	pid_t pid;
	FILE *f;
	int err, status;

	if (lib_flags)
		assert_int_equal(sh("cd %s && cc -O2 -fPIC -shared -iquote %s %s -o lib%s.so", dir, inc, lib_flags, name),
				 0);
	assert_int_equal(sh("cd %s && cc -O2 -iquote %s prog.c %s -o %s -ldl", dir, inc, prog_flags, name), 0);
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char path[256];

		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	f = fdopen(out[0], "r");
	assert_non_null(fgets(line, sizeof(line), f));
	assert_int_equal(sscanf(line, "%lx %lx", &fs, &addr), 2);
	assert_true(addr != 0 || want_err);

	err = otel_tls_recipe(pid, &r, &model);
	if (!err)
		err = otel_tls_var_addr(pid, fs, &r, &got);
	close(in[1]);
	fclose(f);
	waitpid(pid, &status, 0);

	print_message("  %-14s %-16s recipe %s off %lld modid %llu\n", name, otel_tls_model_name(model),
		      r.kind == SP_OTEL_TP ? "tp" : "dtv", (long long)r.off, (unsigned long long)r.modid);
	assert_int_equal(err, want_err);
	assert_int_equal(model, want_model);
	if (!want_err)
		assert_int_equal(got, addr);
}

static void test_exe_pie(void **state)
{
	(void)state;
	check("pie", NULL, "-DIN_EXE -fPIE -pie -Wl,--export-dynamic-symbol=otel_thread_ctx_v1", OTEL_TLS_EXEC, 0);
}

static void test_exe_nopie(void **state)
{
	(void)state;
	check("nopie", NULL, "-DIN_EXE -fno-PIE -no-pie -Wl,--export-dynamic-symbol=otel_thread_ctx_v1", OTEL_TLS_EXEC,
	      0);
}

/* A static executable with no .dynsym: the symbol is found in .symtab. */
static void test_exe_static(void **state)
{
	(void)state;
	check("static", NULL, "-DIN_EXE -static", OTEL_TLS_EXEC, 0);
}

static void test_exe_static_pie(void **state)
{
	(void)state;
	check("staticpie", NULL, "-DIN_EXE -static-pie -Wl,--export-dynamic-symbol=otel_thread_ctx_v1", OTEL_TLS_EXEC,
	      0);
}

static void test_so_tlsdesc(void **state)
{
	(void)state;
	check("desc", "-mtls-dialect=gnu2 lib.c", "-L. -ldesc -Wl,-rpath,$PWD", OTEL_TLS_DESC, 0);
}

static void test_so_gd(void **state)
{
	(void)state;
	check("gd", "-mtls-dialect=gnu -ftls-model=global-dynamic lib.c", "-L. -lgd -Wl,-rpath,$PWD", OTEL_TLS_GD, 0);
}

static void test_so_ie(void **state)
{
	(void)state;
	check("ie", "-ftls-model=initial-exec lib.c", "-L. -lie -Wl,-rpath,$PWD", OTEL_TLS_IE, 0);
}

/* dlopen'ed: the module may sit in dynamic TLS, reached through the dtv. */
static void test_dlopen_gd(void **state)
{
	(void)state;
	check("dlgd", "-mtls-dialect=gnu lib.c", "-DDLOPEN='\"'$PWD/libdlgd.so'\"'", OTEL_TLS_GD, 0);
}

static void test_dlopen_tlsdesc(void **state)
{
	(void)state;
	check("dldesc", "-mtls-dialect=gnu2 lib.c", "-DDLOPEN='\"'$PWD/libdldesc.so'\"'", OTEL_TLS_DESC, 0);
}

/* Exported but reached by no relocation: a model no reader can follow. */
static void test_so_unreferenced(void **state)
{
	(void)state;
	check("unused", "unused.c", "-L. -lunused -Wl,-rpath,$PWD", 0, -EPROTO);
}

/* Exported with the wrong model: not thread-local at all. */
static void test_so_not_tls(void **state)
{
	(void)state;
	check("notls", "notls.c", "-L. -lnotls -Wl,-rpath,$PWD", 0, -ENOEXEC);
}

/* No variable at all. */
static void test_none(void **state)
{
	(void)state;
	check("none", NULL, "-DDLOPEN='\"/nonexistent\"'", 0, -ENOENT);
}

static void test_elf_bad(void **state)
{
	struct otel_tls_elf e;

	(void)state;
	assert_int_equal(otel_tls_elf_find("/nonexistent", true, &e), -ENOENT);
	assert_int_equal(otel_tls_elf_find("/proc/self/status", true, &e), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exe_pie),	       cmocka_unit_test(test_exe_nopie),
		cmocka_unit_test(test_exe_static),     cmocka_unit_test(test_exe_static_pie),
		cmocka_unit_test(test_so_tlsdesc),     cmocka_unit_test(test_so_gd),
		cmocka_unit_test(test_so_ie),	       cmocka_unit_test(test_dlopen_gd),
		cmocka_unit_test(test_dlopen_tlsdesc), cmocka_unit_test(test_so_unreferenced), cmocka_unit_test(test_so_not_tls),
		cmocka_unit_test(test_none),	       cmocka_unit_test(test_elf_bad),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
