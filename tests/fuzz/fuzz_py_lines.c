// SPDX-License-Identifier: GPL-2.0
/*
 * CPython's line tables on any bytes, with an oracle: the runs built from a
 * table must give every index the line the one-index decoder gives it
 * (up to where a malformed table or the runs' room stops them), and the
 * runs decoder, on any bytes, must end.
 * Input: u8 format, s32 firstlineno, u16 code units, then the table.
 */
#include "fuzz_common.h"
#include "py_lines.h"
#include "py_names.h"
#include "sbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbuf runs = {};
	struct py_runs r;
	enum py_line_format f;
	int32_t first;
	uint16_t units;
	int e;

	if (size < 7)
		return 0;
	f = data[0] % 3;
	memcpy(&first, data + 1, 4);
	memcpy(&units, data + 5, 2);
	/* The oracle asks every index of the one-index decoder: quadratic, so the code stays small. */
	units %= 2048;
	data += 7;
	size -= 7;
	py_runs_init(&r, &runs, first, data[-1] & 1 ? 64 : 1 << 20);
	e = py_lines_runs(f, data, size, first, units, &r);
	if (!runs.err) {
		for (int i = -1; i < units; i++) {
			bool bad;
			int one = py_lines_addr2line(f, data, size, first, i, &bad);
			int run = py_runs_line((__u8 *)runs.p, runs.len, first, i);

			/* Where the runs stopped (a fault, or no room), their later units have no line. */
			if (run != one && !(run == -1 && (e || r.cut || bad)))
				abort();
		}
	}
	sbuf_free(&runs);
	/* The runs decoder alone, on the raw bytes. */
	for (int i = -2; i < 64; i++)
		py_runs_line(data, size, first, i);
	return 0;
}
