// SPDX-License-Identifier: GPL-2.0
/* A callback through a shared library built without frame pointers (workload_dwarf). */
__attribute__((noinline)) int dwarfcb_each(int *v, int n, int (*fn)(int *, int))
{
	int sum = 0;

	for (int i = 0; i < n; i++)
		sum += fn(v, i);
	return sum;
}
