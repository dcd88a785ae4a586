// SPDX-License-Identifier: GPL-2.0
/*
 * The Itanium C++ ABI demangler is libstdc++'s __cxa_demangle, which every
 * Debian system has; it always prints parameters, so this file trims its
 * output to what perf prints (libiberty without DMGL_PARAMS), which is what
 * users compare spanperf's reports with.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

#define MAX_MANGLED 4096

extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static bool only_qualifiers(const char *s)
{
	static const char *const words[] = { "const", "volatile", "&&", "&", "noexcept" };

	for (;;) {
		size_t i, n = 0;

		while (*s == ' ')
			s++;
		if (!*s)
			return true;
		for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
			n = strlen(words[i]);
			if (!strncmp(s, words[i], n))
				break;
		}
		if (i == sizeof(words) / sizeof(words[0]))
			return false;
		s += n;
	}
}

/* Cuts "(params) const" off a function's name; false if s is no function. */
static bool cut_params(char *s)
{
	char *close = strrchr(s, ')');
	int depth = 0;

	if (!close || !only_qualifiers(close + 1))
		return false;
	for (char *p = close; p >= s; p--) {
		depth += (*p == ')') - (*p == '(');
		if (!depth) {
			if (p == s)
				return false;
			*p = 0;
			return true;
		}
	}
	return false;
}

/*
 * A function template's name starts with its return type: "int max<int>".
 * The type ends at the last space outside brackets before the name; an
 * operator's own spaces ("operator new", "operator< <int>") are the name's.
 */
static void cut_return_type(char *s)
{
	char *space = NULL;
	int depth = 0;

	for (char *p = s; *p; p++) {
		if (!depth && !strncmp(p, "operator", 8) && (p == s || !isalnum((unsigned char)p[-1]) || p[-1] == ':'))
			break;
		if (strchr("(<{[", *p))
			depth++;
		else if (strchr(")>}]", *p) && depth)
			depth--;
		else if (*p == ' ' && !depth)
			space = p;
	}
	if (space)
		memmove(s, space + 1, strlen(space + 1) + 1);
}

/* Legacy Rust: "core::fmt::write::h0123456789abcdef", with $LT$-style escapes. */
static bool rust_hash(const char *s, size_t *name_len)
{
	size_t n = strlen(s);

	if (n < 20 || strncmp(s + n - 19, "::h", 3))
		return false;
	for (size_t i = n - 16; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	*name_len = n - 19;
	return true;
}

static void rust_unescape(char *s, size_t len)
{
	static const struct { const char *esc, *ch; } map[] = {
		{ "$SP$", "@" }, { "$BP$", "*" }, { "$RF$", "&" }, { "$LT$", "<" }, { "$GT$", ">" },
		{ "$LP$", "(" }, { "$RP$", ")" }, { "$C$", "," }, { "$u7e$", "~" }, { "$u20$", " " },
		{ "$u27$", "'" }, { "$u5b$", "[" }, { "$u5d$", "]" }, { "$u7b$", "{" }, { "$u7d$", "}" },
		{ "$u3b$", ";" }, { "$u2b$", "+" }, { "$u22$", "\"" },
	};
	char *out = s;

	for (size_t i = 0; i < len;) {
		bool part_start = out == s || (out - s >= 2 && out[-1] == ':' && out[-2] == ':');
		size_t k;

		/* A path part cannot start with '$', so rustc puts '_' before one. */
		if (part_start && s[i] == '_' && i + 1 < len && s[i + 1] == '$') {
			i++;
			continue;
		}
		if (s[i] == '.' && i + 1 < len && s[i + 1] == '.') {
			*out++ = ':';
			*out++ = ':';
			i += 2;
			continue;
		}
		for (k = 0; k < sizeof(map) / sizeof(map[0]); k++) {
			size_t n = strlen(map[k].esc);

			if (s[i] == '$' && i + n <= len && !strncmp(s + i, map[k].esc, n)) {
				*out++ = map[k].ch[0];
				i += n;
				break;
			}
		}
		if (k == sizeof(map) / sizeof(map[0]))
			*out++ = s[i++];
	}
	*out = 0;
}

char *demangle(const char *name)
{
	char *d, *clone;
	size_t len;
	int status;

	/*
	 * __cxa_demangle recurses on nesting; a hostile binary's name could
	 * exhaust the stack.  Real names, even of deep templates, are shorter.
	 */
	if (strncmp(name, "_Z", 2) || strlen(name) > MAX_MANGLED)
		return NULL;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (!d || status) {
		free(d);
		return NULL;
	}
	/* "foo() [clone .cold]": libiberty prints only "foo". */
	clone = strstr(d, " [clone ");
	if (clone)
		*clone = 0;
	/* Special names ("vtable for X", thunks) start with _ZT/_ZG: no return type. */
	if (cut_params(d) && strncmp(name, "_ZT", 3) && strncmp(name, "_ZG", 3))
		cut_return_type(d);
	if (rust_hash(d, &len))
		rust_unescape(d, len);
	return d;
}
