/* SPDX-License-Identifier: GPL-2.0 */
/* libbpf set-up shared by every command: logging and quiet probing. */
#ifndef SP_LOADER_H
#define SP_LOADER_H

#include <stdbool.h>

/* Routes libbpf's messages: warnings with -v, debug with -vv. */
void loader_init(void);
/* Silences libbpf while probing features that are expected to fail. */
void loader_quiet(bool quiet);
/* One sentence for a failed load or attach, with the likely cause. */
const char *loader_explain(int err);

#endif
