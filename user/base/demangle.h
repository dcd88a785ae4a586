/* SPDX-License-Identifier: GPL-2.0 */
/* C++ and legacy Rust symbol names, shown the way perf report shows them. */
#ifndef SP_DEMANGLE_H
#define SP_DEMANGLE_H

/*
 * Returns a malloc'd readable name for a mangled one, or NULL when name is
 * not mangled (or not validly).  Like perf (libiberty without DMGL_PARAMS):
 * no parameter list, no template return type, no const, no clone suffix;
 * legacy Rust names lose their ::h<hash> and $..$ escapes.
 */
char *demangle(const char *name);

#endif
