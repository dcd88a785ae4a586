// SPDX-License-Identifier: GPL-2.0
/*
 * top's screens over the last window: the table's rows (report_out.h, or
 * with --spans the span view's, spans_view.h) as report prints them, cut
 * to -E; on the full screen also filtered by '/', re-sorted by 's' (the
 * profile's), and cut to the terminal's height.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curses.h>

#include "log.h"
#include "profile.h"
#include "spans_view.h"
#include "top_view.h"
#include "util.h"

static const char rule[] = "-------------------------------------------------------------------------------\n";

/* A row of the profile's table and its chains, or without a row the column heads. */
static void row_text(const void *tab, const void *r, FILE *f)
{
	if (r)
		table_print_row(tab, r, f);
	else
		table_print_columns(tab, f);
}

/* A name's row of the span table, or without one the column heads. */
static void kind_text(const void *v, const void *kd, FILE *f)
{
	if (kd)
		spans_print_kind(v, kd, f);
	else
		spans_print_columns(v, f);
}

/* What print writes of (a, b), as text; NULL if out of memory. */
static char *printed(void (*print)(const void *a, const void *b, FILE *f), const void *a, const void *b)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	print(a, b, f);
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}

/* The rows to show: the filter's (the full screen), the first -E. */
static int build(struct table *tab, struct top *t, const char *filter)
{
	struct table_opts to = t->to;

	to.max_rows = t->o->entries;
	to.filter = filter;
	return table__build(tab, t->last, &to);
}

/* The last window's table: its header and its first -E rows, each with its chains under -g. */
static int print_table(struct top *t, FILE *out)
{
	struct table tab;
	int e = build(&tab, t, NULL);

	if (e)
		return e;
	table_print_header(&tab, out);
	for (size_t i = 0; i < tab.nr_rows; i++)
		table_print_row(&tab, &tab.rows[i], out);
	table__free(&tab);
	return 0;
}

void top_view_print(struct top *t)
{
	const struct top_opts *o = t->o;
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	int e = !mem ? -errno : o->spans ? spans_print_table(t->last_view, mem) : print_table(t, mem);

	if (mem && fclose(mem) && !e)
		e = -ENOMEM;
	if (e) {
		pr_warn("a refresh was lost: %s", strerror(-e));
		free(text);
		return;
	}
	if (t->clear)
		fputs("\033[H\033[2J", stdout);
	else if (t->refreshes > 1)
		fputc('\n', stdout);
	if (o->spans)
		printf("   spanperf top: spans of the last %.1f s, refresh %llu\n", o->delay,
		       (unsigned long long)t->refreshes);
	else
		printf("   spanperf top: %llu samples in %.1f s [%llu Hz], refresh %llu\n",
		       (unsigned long long)t->last->samples, o->delay, (unsigned long long)o->freq,
		       (unsigned long long)t->refreshes);
	fputs(rule, stdout);
	fputs(text, stdout);
	fflush(stdout);
	free(text);
}

/* Lines of text (freed here) from row y down, as many as the screen has above its bottom row; the next y. */
static int draw_lines(char *text, int y)
{
	for (const char *l = text ? text : "", *nl; *l && y < LINES - 1; l = nl) {
		nl = strchr(l, '\n');
		nl = nl ? nl + 1 : l + strlen(l);
		mvaddnstr(y++, 0, l, SP_MIN(nl - l - (nl[-1] == '\n'), COLS));
	}
	free(text);
	return y;
}

/* The column heads and the rows the filter keeps, cut to -E and to the screen. */
static void draw_table(struct top *t, int y)
{
	struct table tab;
	int e = build(&tab, t, t->filter);

	if (e) {
		snprintf(t->note, sizeof(t->note), "cannot draw the table: %s", strerror(-e));
		return;
	}
	y = draw_lines(printed(row_text, &tab, NULL), y);
	for (size_t i = 0; i < tab.nr_rows && y < LINES - 1; i++)
		y = draw_lines(printed(row_text, &tab, &tab.rows[i]), y);
	table__free(&tab);
}

/* --spans: the span table's column heads and the names the filter keeps, cut to -E and to the screen. */
static void draw_spans(struct top *t, int y)
{
	struct spans_rows rows;
	int e = spans_rows__build(&rows, t->last_view, t->filter, t->o->entries);

	if (e) {
		snprintf(t->note, sizeof(t->note), "cannot draw the table: %s", strerror(-e));
		return;
	}
	y = draw_lines(printed(kind_text, t->last_view, NULL), y);
	for (size_t i = 0; i < rows.nr && y < LINES - 1; i++)
		y = draw_lines(printed(kind_text, t->last_view, rows.kind[i]), y);
	spans_rows__free(&rows);
}

/* The screen: title, the table's column line and rows, the keys. */
void top_view_draw(struct top *t)
{
	int y = 2;

	erase();
	mvprintw(0, 0, "   spanperf top: %llu samples in %.1f s [%llu Hz], refresh %llu%s",
		 (unsigned long long)(t->last ? t->last->samples : 0), t->o->delay, (unsigned long long)t->o->freq,
		 (unsigned long long)t->refreshes, t->paused ? "  [paused]" : "");
	mvhline(1, 0, '-', COLS);
	if (!t->refreshes)
		mvprintw(y, 0, "waiting %.1f s for the first window...", t->o->delay);
	else if (t->o->spans && t->last_view)
		draw_spans(t, y);
	else if (t->last)
		draw_table(t, y);
	attron(A_REVERSE);
	mvprintw(LINES - 1, 0, " q quit  s sort [%s]  / filter [%s]  p %s  %s", t->sort, t->filter,
		 t->paused ? "resume" : "pause", t->note);
	attroff(A_REVERSE);
	refresh();
}

void top_view_start(struct top *t)
{
	(void)t;
	initscr();
	cbreak();
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	curs_set(0);
}

void top_view_end(struct top *t)
{
	(void)t;
	endwin(); /* the terminal as it was, whatever ended the run */
}

/* A line typed on the bottom row, with echo; the loop waits meanwhile (the rings hold seconds). */
static void prompt(const char *what, char *buf, int len)
{
	move(LINES - 1, 0);
	clrtoeol();
	printw("%s", what);
	echo();
	curs_set(1);
	nodelay(stdscr, FALSE);
	getnstr(buf, len - 1);
	nodelay(stdscr, TRUE);
	curs_set(0);
	noecho();
}

static void sort_key(struct top *t)
{
	struct table_opts to = t->to;
	char buf[128] = "";

	prompt("sort keys (comm,pid,tid,dso,sym): ", buf, sizeof(buf));
	if (!buf[0])
		return;
	if (parse_sort_keys(buf, &to)) {
		snprintf(t->note, sizeof(t->note), "unknown or repeated sort key in '%.60s'", buf);
		return;
	}
	t->to = to;
	snprintf(t->sort, sizeof(t->sort), "%s", buf);
}

int top_view_keys(struct top *t)
{
	int c;

	while ((c = getch()) != ERR) {
		char buf[128] = "";

		t->note[0] = 0;
		switch (c) {
		case 'q':
		case 'Q':
			return 1;
		case 'p':
			t->paused = !t->paused;
			break;
		case 's':
			sort_key(t);
			break;
		case '/':
			prompt("filter rows by: ", buf, sizeof(buf));
			snprintf(t->filter, sizeof(t->filter), "%s", buf);
			break;
		default:
			continue;
		}
		top_view_draw(t);
	}
	return 0;
}
