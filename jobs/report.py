"""Leaderboards in each paper's layout: every benchmark module formats its own table (`table_text`, and
`table_html` where it has one; see benchmarks.protocol); this module groups a run's metrics by benchmark and puts the tables together."""
from __future__ import annotations

import html
from collections import defaultdict
from typing import Any

from benchmarks.protocol import benchmark


def _by_benchmark(metrics: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for m in metrics:
        groups[m["benchmark"]].append(m)
    return dict(groups)


def report_text(metrics: list[dict[str, Any]]) -> str:
    """One table per benchmark of the run, in the order the benchmarks first appear."""
    return "\n\n".join(benchmark(name).table_text(group) for name, group in _by_benchmark(metrics).items())


def report_html(metrics: list[dict[str, Any]]) -> str:
    """A self-contained page: each benchmark's HTML table, or its text table where it has no HTML one."""
    sections = []
    for name, group in _by_benchmark(metrics).items():
        spec = benchmark(name)
        table = spec.table_html(group) or f"<pre>{html.escape(spec.table_text(group))}</pre>"
        sections.append(f"<h1>{html.escape(name)}</h1>{table}")
    return ("<!doctype html><meta charset='utf-8'><title>ragjudge report</title>"
            "<style>body{font-family:sans-serif}td,th{padding:4px 8px;border-bottom:1px solid #ddd;"
            "text-align:right}td:first-child{text-align:left}</style>" + "".join(sections))
