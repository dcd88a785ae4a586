/* SPDX-License-Identifier: GPL-2.0 */
/*
 * spanperf help COMMAND: a manual page the binary carries, shown as perf
 * help shows perf's.  On a terminal with man(1), the page goes to `man -l -`
 * (its pager, its width); elsewhere, or where man fails, it is rendered as
 * plain text by groff, else mandoc; with neither, the Markdown it was made
 * from is printed as it is, which reads well enough as text.
 */
#ifndef SP_MAN_PAGE_H
#define SP_MAN_PAGE_H

/* roff: the man(7) page; md: its source.  0, or -errno of writing it out. */
int man_page_show(const char *roff, const char *md);

#endif
