"""The paper's Table 2 layout, as fixed-width text and as HTML."""
from __future__ import annotations

import html
from typing import Any

from benchmarks.formatting import pct
from benchmarks.rag_rewardbench.load import BENCHMARK
from benchmarks.rag_rewardbench.metrics import COLUMN_TITLES
from benchmarks.tables import titled

KIND_MARK = {"discriminative": "D", "generative": "G", "implicit": "I", "api": "A"}  # A: generative judge behind an API


def _interval(ci: list[float] | None) -> str:
    return "" if not ci else f"[{100 * ci[0]:.0f},{100 * ci[1]:.0f}]"


def _pct(value: float | None) -> str:
    return "  -  " if value is None else f"{pct(value):>5}"


def ranked(metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per model, best overall first, as the paper ranks them."""
    return sorted(metrics, key=lambda m: -(m["columns"].get("overall") or 0.0))


def table_text(metrics: list[dict[str, Any]]) -> str:
    """A fixed-width Table 2: accuracy (%) per column (each headed by its whole title: two are "General"),
    overall with its 95% bootstrap interval."""
    name_width = max([len(m["model"]) + 4 for m in metrics] + [10])
    widths = {c: max(len(title), 5) for c, title in COLUMN_TITLES.items()}
    head = ["Model".ljust(name_width)] + [f"{COLUMN_TITLES[c]:>{widths[c]}}" for c in COLUMN_TITLES]
    lines = [(f"{titled('RAG-RewardBench', BENCHMARK, metrics)}: accuracy %, micro-averaged; D/G/I/A = "
              "discriminative/generative/implicit RM, API judge"),
             " ".join(head) + "   95% CI (overall)   n"]
    for m in ranked(metrics):
        cells = [f"{_pct(m['columns'].get(c)):>{widths[c]}}" for c in COLUMN_TITLES]
        label = f"[{KIND_MARK.get(m.get('kind'), '?')}] {m['model']}".ljust(name_width)
        lines.append(" ".join([label] + cells) + f"   {_interval(m['columns_ci95'].get('overall')):<17}"
                     f"  {m['n']}")
    notes = [f"  {m['model']}: {m['note']}" for m in metrics if m.get("note")]
    position = [m for m in metrics if m.get("position")]
    if position:
        lines.append("Generative judges, both orders: acc(chosen 1st) acc(chosen 2nd) consistency "
                     "1st-position rate  text-parse failures")
        for m in position:
            p = m["position"]
            lines.append(f"  {m['model']}: {_pct(p['accuracy_chosen_first'])} {_pct(p['accuracy_chosen_second'])} "
                         f"{_pct(p['consistency'])} {_pct(p['first_position_rate'])} "
                         f"{_pct(p['text_parse_failure_rate'])}")
    for m in metrics:
        if m.get("synthetic_subsets"):
            n = len(m["synthetic_subsets"])
            lines.append(f"  {m['model']}: {n} SYNTHETIC subsets (generated stand-in pairs for timing, "
                         "benchmarks/rag_rewardbench/synthetic.py): not a result, in no column")
    errors = [m for m in metrics if m.get("n_errors") or m.get("n_bad_rows")]
    for m in errors:
        lines.append(f"  {m['model']}: {m.get('n_errors', 0)} pairs not scored "
                     f"({m.get('n_bad_rows', 0)} bad input rows); see errors/")
    if notes:
        lines += ["Notes:"] + notes
    return "\n".join(lines)


def table_html(metrics: list[dict[str, Any]]) -> str:
    """The same table as HTML, with intervals in every cell."""
    header = "".join(f"<th>{html.escape(COLUMN_TITLES[c])}</th>" for c in COLUMN_TITLES)
    body = []
    for m in ranked(metrics):
        cells = "".join(
            f"<td>{_pct(m['columns'].get(c)).strip()}<br><small>{_interval(m['columns_ci95'].get(c))}</small></td>"
            for c in COLUMN_TITLES)
        note = f"<br><small>{html.escape(m['note'])}</small>" if m.get("note") else ""
        body.append(f"<tr><td>{html.escape(m['model'])} ({html.escape(str(m.get('kind')))}){note}</td>{cells}"
                    f"<td>{m['n']}</td></tr>")
    return (f"<p>{html.escape(titled('RAG-RewardBench', BENCHMARK, metrics))}: accuracy (%), micro-averaged "
            "over pairs; 95% bootstrap intervals.</p>"
            f"<table><tr><th>Model</th>{header}<th>n</th></tr>{''.join(body)}</table>")
