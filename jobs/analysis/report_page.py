"""report/index.html: one self-contained page (inline CSS, inline SVG plots, a few lines of inline JS; nothing
fetched from anywhere), readable with 45 models: per benchmark the leaderboard sorted by score with interval
bars, letter groups and reliability columns, a subset x model heat map, a position-bias plot for judges, the
benchmark's paper table and every pairwise test; then the engine and time accounting of the manifest."""
from __future__ import annotations

import html
from collections import defaultdict
from typing import Any
from urllib.parse import urlencode

from benchmarks.boundary_types import JsonObject
from jobs.analysis import plots
from jobs.analysis.bias_page import bias_section
from jobs.analysis.html_table import number_cell as _num
from jobs.analysis.html_table import table
from jobs.analysis.items_page import items_section
from jobs.analysis.provenance import model_provenance
from jobs.analysis.reliability import COLUMNS
from jobs.analysis.report_view import (
    BenchmarkView,
    PaperTable,
    Report,
    engine_rows,
    error_notes,
    incomplete_notes,
    subset_matrix,
)

CSS = """body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}
td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
td:first-child,th:first-child,td.l,th.l{text-align:left}th{background:#f4f4f4;white-space:normal}
div.scroll{overflow-x:auto}
table.sortable th{cursor:pointer}table.sortable th:after{content:" \\2195";color:#aaa}
svg.plot{max-width:100%;height:auto;display:block;margin:.5em 0}small,.note{color:#666}
.incomplete{color:#b00020;font-weight:600}
details{margin:.5em 0}h2{border-bottom:2px solid #1f4e79;padding-bottom:.2em;margin-top:2em}"""

# Sorting: click a header to sort by it (numbers by data-v, else text); click again to reverse. Then the page
# counts its plots that have laid out with a non-zero size, for a browser test to read back.
JS = """document.querySelectorAll('table.sortable').forEach(t=>{t.querySelectorAll('th').forEach((th,i)=>{
th.addEventListener('click',()=>{const b=t.tBodies[0],rows=[...b.rows],up=th.dataset.dir!=='asc';
const key=r=>{const c=r.cells[i];return c.dataset.v!==undefined?parseFloat(c.dataset.v):c.textContent.trim()};
rows.sort((x,y)=>{const a=key(x),c=key(y);const d=typeof a==='number'&&typeof c==='number'?a-c:
String(a).localeCompare(String(c));return up?d:-d});th.dataset.dir=up?'asc':'desc';
rows.forEach(r=>b.append(r))})})});
document.body.dataset.plotsRendered=[...document.querySelectorAll('svg.plot')].filter(s=>{
const r=s.getBoundingClientRect();return r.width>0&&r.height>0}).length;"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _leaderboard(view: BenchmarkView, board: JsonObject) -> str:
    columns = [c for c in COLUMNS if any(c in view.reliability.get(m["model"], {}) for m in board["models"])]
    missing = any(m.get("missing") for m in board["models"])
    rows = []
    for m in board["models"]:
        lo, hi = m["ci95"] or (None, None)
        ci = "-" if lo is None else f"{100 * lo:.1f} – {100 * hi:.1f}"
        kind = view.kinds.get(m["model"])
        if m["model"] in view.implicit:  # what an implicit model's score is: alone, or a log-ratio vs its reference
            kind = f"{kind} ({view.implicit[m['model']]})"
        label = _e(m["model"]) + (f" <small>{_e(kind)}</small>" if kind else "")
        rel = "".join(_num(view.reliability.get(m["model"], {}).get(c)) for c in columns)
        rows.append(f"<tr><td data-v='{m['rank']}'>{m['rank']}</td><td class='l'>{label}</td>"
                    f"<td class='l'>{_e(m['group'])}</td>{_num(m['score'])}<td>{ci}</td>"
                    f"<td data-v='{m['n']}'>{m['n']}</td>"
                    + (f"<td data-v='{m.get('missing', 0)}'>{m.get('missing', 0)}</td>" if missing else "")
                    + f"{rel}</tr>")
    header = ["rank", "model", "group", "score %", "95% CI", "n", *(["missing"] if missing else []),
              *(c.replace("_", " ") for c in columns)]
    legend = "; ".join(f"<b>{_e(c.replace('_', ' '))}</b>: {_e(COLUMNS[c])}" for c in columns)
    notes = "".join(f"<p class='note'>{_e(note)}</p>" for note in error_notes(view, board))
    return table(header, rows) + (f"<p class='note'>Reliability (%): {legend}.</p>" if legend else "") + notes


def _pairs(board: JsonObject, benchmark: str) -> str:
    # Each row links to the item viewer (jobs.analysis.viewer_page) with the items where a and b differ.
    rows = [f"<tr><td class='l'>{_e(p['a'])}</td><td class='l'>{_e(p['b'])}</td>"
            f"<td data-v='{p['n']}'>{p['n']}</td><td data-v='{p['a_only']}'>{p['a_only']}</td>"
            f"<td data-v='{p['b_only']}'>{p['b_only']}</td>"
            f"<td class='l'>{_e(p['test'])}</td><td data-v='{p['p_value']:.6g}'>{p['p_value']:.3g}</td>"
            f"<td data-v='{p['p_holm']:.6g}'>{p['p_holm']:.3g}</td><td class='l'><a href='#items?"
            f"{_e(urlencode({'benchmark': benchmark, 'a': p['a'], 'b': p['b']}))}'>items</a></td></tr>"
            for p in board["pairs"]]
    significant = sum(p["p_holm"] < 0.05 for p in board["pairs"])
    return (f"<details><summary>All {len(rows)} paired tests ({significant} significant at 0.05 after Holm)"
            "</summary>" + table(["a", "b", "n", "a only", "b only", "test", "p", "p (Holm)", "differ"], rows)
            + "</details>")


def thinking_quartiles(view: BenchmarkView) -> list[JsonObject]:
    """The benchmark's thinking judges whose items' thinking tokens were counted, with their quartiles."""
    return [{"model": m["model"], "quartiles": quartiles} for m in view.metrics
            if (quartiles := (m.get("thinking") or {}).get("accuracy_by_thinking_quartile"))]


def _section(view: BenchmarkView, board: JsonObject | None, paper: PaperTable) -> str:
    parts = [f"<h2 id='{_e(view.name)}'>{_e(view.name)}</h2>"]
    if board and board["models"]:
        parts.append("<p class='note'>Score: mean over items of the item's mean <code>correct</code>. "
                     "Models that share a letter are not significantly different (paired tests on common "
                     "items: exact McNemar for 0/1 outcomes, sign-flip permutation otherwise; Holm over all "
                     "pairs; 0.05).</p>")
        parts.append(_leaderboard(view, board))
        parts.append(plots.ci_plot(board["models"], f"{view.name}: score and 95% interval"))
        models = [m["model"] for m in board["models"]]
        subsets, values = subset_matrix(view, models)
        if len(subsets) > 1:
            parts.append(plots.heatmap(models, subsets, values, f"{view.name}: accuracy by subset"))
        judges = [{"model": m, **view.position[m]} for m in models if m in view.position]
        if judges:
            parts.append(plots.position_plot(judges, f"{view.name}: position bias of the judges"))
        if thinkers := thinking_quartiles(view):
            parts.append(plots.thinking_plot(thinkers, f"{view.name}: accuracy by thinking length"))
        parts.append(bias_section(board))
        parts.append(items_section(view, board))
    parts += [f"<p class='note incomplete'>{_e(note)}</p>" for note in incomplete_notes(view)]
    parts.append("<h3>Paper table</h3>")
    if paper.html:
        parts.append(paper.html)
    elif paper.text:
        parts.append(f"<pre>{_e(paper.text)}</pre>")
    else:
        parts.append(f"<p class='note'>Paper table unavailable: {_e(paper.problem)}</p>")
    if board and board["pairs"]:
        parts.append(_pairs(board, view.name))
    return "\n".join(parts)


def _accounting(manifest: JsonObject) -> str:
    """Per cell: engine, status, time and counts; per engine: cells and seconds; the run's wall-clock span.
    Numeric fields a cell carries beyond the known ones (from a newer pipeline) get their own columns."""
    cells = manifest.get("cells") or {}
    if not cells:
        return ""
    models = (manifest.get("config") or {}).get("models") or {}
    known = {"status", "seconds", "n", "n_errors", "started_at", "finished_at", "hash", "answers_hash",
             "error"}
    extra = sorted({k for c in cells.values() for k, v in c.items()
                    if k not in known and isinstance(v, (int, float)) and not isinstance(v, bool)})
    rows, engines = [], defaultdict(lambda: [0, 0.0])
    for key, cell in sorted(cells.items()):
        benchmark, _, model = key.partition("/")
        engine = str((models.get(model) or {}).get("engine") or "")
        seconds = cell.get("seconds")
        if seconds is not None:
            engines[engine][0] += 1
            engines[engine][1] += float(seconds)
        why = cell.get("error") or cell.get("message")  # failed, or failed_errors: over its error budget
        error = f" <small>{_e(why[:200])}</small>" if why else ""
        rows.append(f"<tr><td class='l'>{_e(benchmark)}</td><td class='l'>{_e(model)}</td><td class='l'>"
                    f"{_e(engine)}</td><td class='l'>{_e(cell.get('status', ''))}{error}</td>"
                    + _num(seconds, 1, 1.0) + _num(cell.get("n"), 0, 1.0) + _num(cell.get("n_errors"), 0, 1.0)
                    + "".join(_num(cell.get(k), 1, 1.0) for k in extra) + "</tr>")
    starts = [c["started_at"] for c in cells.values() if c.get("started_at")]
    ends = [c["finished_at"] for c in cells.values() if c.get("finished_at")]
    span = f"{max(ends) - min(starts):.0f} s from the first cell's start to the last cell's end; " \
        if starts and ends else ""
    totals = ", ".join(f"{_e(engine or 'unknown')}: {count} cells, {secs:.0f} s" for engine, (count, secs)
                       in sorted(engines.items()))
    meta = ", ".join(f"{k} {_e(manifest[k])}" for k in ("attempts", "git_sha") if manifest.get(k))
    engines = engine_rows(manifest)
    per_engine = table(engines[0], ["<tr>" + "".join(f"<td class='l'>{_e(c)}</td>" for c in row[:2])
                                    + "".join(f"<td>{_e(c)}</td>" for c in row[2:]) + "</tr>"
                                    for row in engines[1:]]) if engines else ""
    produced = model_provenance(manifest)
    provenance = ("<h3>What produced each model's numbers</h3>" + table(produced[0], [
        "<tr>" + "".join(f"<td class='l'>{_e(c)}</td>" for c in row) + "</tr>" for row in produced[1:]])
        if produced else "")
    return ("<h2 id='accounting'>Engines and time</h2>"
            f"<p>{span}cell time by engine: {totals or '-'}{'. ' + meta if meta else ''}</p>" + per_engine
            + table(["benchmark", "model", "engine", "status", "seconds", "n", "errors", *extra], rows) + provenance)


def _not_scored(report: Report) -> str:
    """The cells the run did not score, with why, above every table: a missing cell is never only absent."""
    if not report.not_scored:
        return ""
    cells = "".join(f"<li><b>{_e(c['benchmark'])} x {_e(c['model'])}</b>: {_e(c['status'])}"
                    + (f": {_e(c['reason'])}" if c["reason"] else "") + "</li>" for c in report.not_scored)
    return f"<section id='not-scored'><h2>Cells not scored</h2><ul>{cells}</ul></section>"


def render_page(report: Report, tables: dict[str, PaperTable], viewer: str = "") -> str:
    """The whole page for a run's report; `tables`: each benchmark's paper table; `viewer`: the item viewer's
    section (jobs.analysis.viewer_page), before the accounting."""
    boards = report.leaderboard["benchmarks"]
    nav = " · ".join(f"<a href='#{_e(v.name)}'>{_e(v.name)}</a>" for v in report.views)
    sections = [_section(v, boards.get(v.name), tables[v.name]) for v in report.views]
    models = {m for v in report.views for m in v.outcomes}
    items = " · <a href='#items'>items</a>" if viewer else ""
    return ("<!doctype html><html lang='en'><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width,initial-scale=1'>"
            f"<title>ragjudge report: {_e(report.run)}</title><style>{CSS}</style><body>"
            f"<h1>ragjudge report: {_e(report.run)}</h1>"
            f"<p>{len(report.views)} benchmarks, {len(models)} models. "
            f"{nav}{items} · <a href='#accounting'>engines and time</a></p>"
            + _not_scored(report) + "\n".join(sections) + viewer + _accounting(report.manifest) + f"<script>{JS}</script></body></html>")
