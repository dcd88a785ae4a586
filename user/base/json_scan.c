// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>

#include "json_scan.h"

int json_scan_str(const char **pp, const char *end, char *out, size_t len)
{
	const char *p = *pp;
	size_t o = 0;

	if (p >= end || *p != '"')
		return -1;
	for (p++; p < end && *p != '"'; p++) {
		char ch = *p;

		if ((unsigned char)ch < 0x20)
			return -1;
		if (ch == '\\') {
			if (++p >= end)
				return -1;
			switch (*p) {
			case '"': case '\\': case '/': ch = *p; break;
			case 'n': ch = '\n'; break;
			case 't': ch = '\t'; break;
			case 'r': ch = '\r'; break;
			case 'b': ch = '\b'; break;
			case 'f': ch = '\f'; break;
			case 'u':
				if (end - p < 5)
					return -1;
				for (int i = 1; i <= 4; i++)
					if (!isxdigit((unsigned char)p[i]))
						return -1;
				p += 4;
				ch = '?';
				break;
			default:
				return -1;
			}
		}
		if (out && o + 1 < len)
			out[o++] = ch;
	}
	if (p >= end)
		return -1;
	*pp = p + 1;
	if (out && len)
		out[o] = 0;
	return 0;
}
