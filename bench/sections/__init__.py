# SPDX-License-Identifier: GPL-2.0
"""The section table: one module per section, in the order a full run measures them and the
page prints them.  A section's name on the command line is its module's name."""
from . import dwarf, forks, inkernel, live, offcpu, otel, parts, recorder, report, rss, spans, stat, stolen

TABLE = [
    inkernel,
    recorder,
    stat,
    spans,
    report,
    offcpu,
    forks,
    stolen,
    parts,
    dwarf,
    rss,
    otel,
    live,
]

SECTIONS = {m.__name__.rsplit(".", 1)[1]: m for m in TABLE}
