/* SPDX-License-Identifier: GPL-2.0 */
/*
 * argv to each module's opts struct, by the tables of base/options.h:
 * record's to struct record_opts (record/record.h), stat's to stat_opts
 * (live/stat.h).
 * Pure functions, so that unit tests cover them without BPF or root.
 */
#ifndef SP_CMD_OPTS_H
#define SP_CMD_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "options.h"
#include "record.h"
#include "stat.h"

int record_parse_args(int argc, char **argv, struct record_opts *o, char *err, size_t errlen);
void record_usage(FILE *out);

int stat_parse_args(int argc, char **argv, struct stat_opts *o, char *err, size_t errlen);
void stat_usage(FILE *out);

/*
 * After a parser returned e != 0: says err unless --help was asked for;
 * the exit status (0 after --help, else 1).
 */
int cmd_parse_failed(int e, const char *err);

/* Appends arg to a repeatable option's list (--span): 0, or -ENOMEM with the list as it was. */
int cmd_push_arg(const char ***list, int *nr, const char *arg);

#endif
