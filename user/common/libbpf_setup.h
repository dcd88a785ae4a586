/* SPDX-License-Identifier: GPL-2.0 */
/* libbpf set-up shared by every command: logging and quiet probing. */
#ifndef SP_LIBBPF_SETUP_H
#define SP_LIBBPF_SETUP_H

#include <stdbool.h>

/* Routes libbpf's messages: warnings with -v, debug with -vv. */
void libbpf_setup_init(void);
/* Silences libbpf while probing features that are expected to fail. */
void libbpf_setup_quiet(bool quiet);
/* One sentence for a failed load or attach, with the likely cause. */
const char *libbpf_explain(int err);

#endif
