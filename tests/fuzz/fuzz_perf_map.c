// SPDX-License-Identifier: GPL-2.0
/*
 * The perf-map reader (symbols.c's /tmp/perf-PID.map): a JIT's text of any
 * bytes, read as the recording kept it (PD_FEAT_SP_JIT_MAPS) or from the
 * file under the root, then addresses around each entry resolved in the
 * JIT's anonymous mapping.  Checked: a name found is the name of a line
 * of the text that starts where the symbol does (a prefix of it, for a
 * name cut to fit; demangled, for a mangled one), and the address is
 * inside the symbol, so that no line's bytes can forge another entry.
 */
#include <ctype.h>
#include <sys/stat.h>

#include "demangle.h"
#include "fuzz_check.h"
#include "fuzz_rec.h"
#include "symbols.h"

#define PID 100
#define MAX_LINES 4096

struct line {
	unsigned long long start, size;
	const char *name; /* into the copy of the text */
	size_t len;
};

/* The text's lines as the format has them: one entry per '\n', "START SIZE NAME". */
static size_t parse(char *text, size_t n, struct line *l)
{
	size_t nr = 0;

	for (char *p = text, *end = text + n; p < end && nr < MAX_LINES - 1;) {
		char *nl = memchr(p, '\n', end - p);
		int used = 0;

		if (nl)
			*nl = 0;
		if (sscanf(p, "%llx %llx %n", &l[nr].start, &l[nr].size, &used) == 2 && used) {
			l[nr].name = p + used;
			l[nr].len = strlen(p + used);
			nr++;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	return nr;
}

static void check(const struct line *l, size_t nr, __u64 ip, const struct sym *s)
{
	if (!s->name || !s->dso)
		abort();
	if (!s->known)
		return;
	if (ip < s->sym_start || ip >= s->sym_end) {
		fprintf(stderr, "fuzz: %#llx named %s [%#llx, %#llx), which does not hold it\n", (unsigned long long)ip,
			s->name, (unsigned long long)s->sym_start, (unsigned long long)s->sym_end);
		abort();
	}
	for (size_t i = 0; i < nr; i++) {
		char *d;
		bool same;

		if (l[i].start != s->sym_start)
			continue;
		if (strlen(s->name) <= l[i].len && !strncmp(l[i].name, s->name, strlen(s->name)))
			return;
		/* Mangled names are shown demangled, as ELF symbols are. */
		d = demangle(l[i].name);
		same = d && !strcmp(d, s->name);
		free(d);
		if (same)
			return;
	}
	fprintf(stderr, "fuzz: %#llx named \"", (unsigned long long)ip);
	fuzz_show(s->name, strlen(s->name));
	fprintf(stderr, "\" at %#llx: no line of the map says so\n", (unsigned long long)s->sym_start);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct line l[MAX_LINES];
	char root[PATH_MAX], path[PATH_MAX + 32], *copy;
	struct pd_jit_map jm = { .pid = PID };
	struct pd_meta meta = { .jit_maps = &jm };
	struct symbolizer *s;
	bool kept;
	size_t nr;

	if (!size)
		return 0;
	kept = data[0] & 1;
	/* The text whole (NULs and all), as the recording keeps it or the process wrote it. */
	jm.text = (char *)data + 1;
	jm.len = size - 1;
	meta.nr_jit_maps = kept && jm.len;
	snprintf(root, sizeof(root), "%s/root", fz_dir_get());
	snprintf(path, sizeof(path), "%s/tmp", root);
	if (mkdir(root, 0700) && errno != EEXIST)
		abort();
	if (mkdir(path, 0700) && errno != EEXIST)
		abort();
	snprintf(path, sizeof(path), "%s/tmp/perf-%d.map", root, PID);
	if (!kept) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd < 0 || write_all(fd, data + 1, size - 1))
			abort();
		close(fd);
	} else {
		unlink(path);
	}
	/* Lines end at '\n'; a line's text at its first NUL, as fgets and sscanf take it. */
	copy = fuzz_str(data + 1, size - 1);
	if (!copy)
		abort();
	nr = parse(copy, size - 1, l);
	memset(&l[nr], 0, sizeof(l[nr]));
	s = symbolizer__new(&meta, &(struct symbolizer_opts){ .root = root });
	if (!s || symbolizer__add_map(s, PID, 0, 1ull << 47, 0, "//anon", 0, false, NULL))
		abort();
	for (size_t i = 0; i < nr + 1; i++) {
		/* Each entry's edges, and an address of the input's too. */
		__u64 at[] = { l[i].start, l[i].start + l[i].size - 1, l[i].start + l[i].size, l[i].start - 1,
			       l[i].start + l[i].size / 2 };
		struct sym sym;

		if (i == nr) {
			memcpy(at, data, SP_MIN(size, sizeof(at[0])));
			at[1] = at[0] ^ 1;
		}
		for (size_t k = 0; k < (i == nr ? 2 : 5); k++) {
			symbolizer__resolve(s, PID, at[k], 1, false, &sym);
			check(l, nr, at[k], &sym);
		}
	}
	/* Every number the text holds, wherever it is: where a forged entry would start. */
	for (size_t i = 1, asked = 0; i < size && asked < 256; i++) {
		char num[20] = {};
		struct sym sym;
		__u64 ip;

		if (!isxdigit(data[i]) || isxdigit(data[i - 1]))
			continue;
		memcpy(num, data + i, SP_MIN(size - i, sizeof(num) - 1));
		ip = strtoull(num, NULL, 16);
		symbolizer__resolve(s, PID, ip, 1, false, &sym);
		check(l, nr, ip, &sym);
		asked++;
	}
	symbolizer__free(s);
	free(copy);
	return 0;
}
