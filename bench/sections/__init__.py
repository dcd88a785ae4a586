# SPDX-License-Identifier: GPL-2.0
"""The section table: one module per section, in the order a full run measures them and the
page prints them.  A section's name on the command line is its module's name."""
from . import (agent, dwarf, ehframe, ehtables, forks, inkernel, java, lib, live, offcpu, otel, page, parts,
               python, recorder, report, rss, sched, shortlived, spans, split, srcline, stackcost, stat, stolen, top,
               wakers, wholepath)

TABLE = [
    inkernel,
    recorder,
    stat,
    spans,
    split,
    sched,
    report,
    srcline,
    offcpu,
    wakers,
    forks,
    stolen,
    parts,
    dwarf,
    ehframe,
    ehtables,
    python,
    java,
    wholepath,
    stackcost,
    shortlived,
    rss,
    otel,
    page,
    lib,
    live,
    top,
    agent,
]

SECTIONS = {m.__name__.rsplit(".", 1)[1]: m for m in TABLE}
