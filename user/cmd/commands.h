/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The subcommands: thin layers over the modules in user/.  Each returns the
 * process exit status: 0, 1 on error, or the status of the command it ran.
 */
#ifndef SP_COMMANDS_H
#define SP_COMMANDS_H

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_annotate(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_diff(int argc, char **argv);

#endif
