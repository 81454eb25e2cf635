"""`ragjudge report ROOT/RUN`: which models are better than which, and can the judges be trusted.

From a run's manifest, metrics and item predictions it writes report/leaderboard.json (jobs.analysis.leaderboard:
scores, intervals, paired tests, Holm, letter groups) and report/index.html (jobs.analysis.report_page), and prints
each benchmark's paper table and leaderboard. Each benchmark formats its own paper table (`table_text`,
`table_html`) through benchmarks.protocol; this module only gathers what the run stored.
"""
from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from benchmarks import protocol
from benchmarks.boundary_types import JsonObject
from benchmarks.tables import aligned
from jobs.analysis.board import leaderboard_csv, leaderboard_of
from jobs.analysis.cell_rows import PartRows, add_rows, merge, read_column
from jobs.analysis.ensembles import add_ensembles, run_ensembles
from jobs.analysis.item_viewer import write_viewer
from jobs.analysis.items import board_items, items_jsonl
from jobs.analysis.provenance import mixed_versions, model_provenance
from jobs.analysis.reliability import COLUMNS
from jobs.analysis.report_page import render_page
from jobs.analysis.report_view import (
    BenchmarkView,
    PaperTable,
    Report,
    engine_rows,
    error_notes,
    incomplete_notes,
)
from jobs.analysis.response_pairs import MEASURES, ResponsePair, measured, measured_pairs
from jobs.analysis.tokens import token_counter
from jobs.analysis.viewer_page import viewer_section
from jobs.store import SCORED, RunRoot, UnreadableFile, implicit_scores, predictions_stored
from jobs.store.layout import MANIFEST, REPORT_ITEMS, REPORT_LEADERBOARD, REPORT_LEADERBOARD_CSV, REPORT_PAGE

READERS = 8  # predictions read side by side: on S3 each cell is a few round trips


def paper_table(module: str, metrics: list[JsonObject]) -> PaperTable:
    """The benchmark's table for these metrics.json, or the reason there is none. A table that fails to draw
    must not cost the run its report: the failure is shown where the table would be."""
    try:
        bench = protocol.benchmark(module)
        return PaperTable(bench.table_text(metrics), bench.table_html(metrics))
    except Exception as e:  # noqa: BLE001  (any failure of one table, named in the report)
        return PaperTable(problem=f"{type(e).__name__}: {e}")


def report_text(metrics: list[JsonObject]) -> str:
    """The paper table of each benchmark config in `metrics` (one metrics.json per cell: `benchmark` its module,
    `config` the run's name for it), in first-seen order."""
    groups: dict[tuple[str, str], list[JsonObject]] = defaultdict(list)
    for m in metrics:
        groups[m["benchmark"], m.get("config") or m["benchmark"]].append(m)
    tables = [(name, paper_table(module, group)) for (module, name), group in groups.items()]
    return "\n\n".join(t.text or f"{name}: paper table unavailable ({t.problem})" for name, t in tables)


def _cell_view(root: RunRoot, benchmark: str, model: str, entry: JsonObject,
               count_tokens: Callable[[str], int] | None) -> tuple[BenchmarkView, dict[str, ResponsePair], str | None]:
    """A cell's rows folded into a view of its own (add_rows), its items' response pairs (their texts measured
    part by part, never held), and why its rows cannot be trusted (a part missing, unreadable or short of the
    rows its manifest.json `entry` records), else None. The rows stay Arrow parts (PartRows) and only the
    fold leaves the reading thread."""
    view = BenchmarkView(benchmark, benchmark)
    try:
        parts = root.read_folder_parts(root.partition("predictions", benchmark, model), read_column,
                                       transform=measured(count_tokens))
    except UnreadableFile as e:
        return view, {}, str(e)
    rows = PartRows(parts)
    expected = predictions_stored(entry)
    if len(rows) < expected:
        where = root.uri(root.partition("predictions", benchmark, model))
        return view, {}, (f"{where} holds {len(rows)} rows; manifest.json says the cell is {entry.get('status')} "
                          f"with {expected}" if rows else f"{where}: no part; manifest.json says the cell is "
                          f"{entry.get('status')} with {expected} rows")
    pairs = measured_pairs(rows)
    add_rows(view, model, PartRows([part.drop_columns([n for n in MEASURES if n in part.column_names])
                                    for part in parts]))
    return view, pairs, None


def _cell_metrics(root: RunRoot, benchmark: str, model: str) -> tuple[JsonObject | None, str | None]:
    """A cell's metrics.json (None where there is none: its paper table row is left out, its leaderboard row is
    made from the predictions), or why it cannot be read."""
    try:
        return root.read_json(root.metrics_path(benchmark, model)), None
    except UnreadableFile as e:
        return None, str(e)


def load_report(root: RunRoot, tokenizer: str | None = None) -> Report | None:
    """The report of the run's scored cells (done, and failed_errors: over their error budget, their metrics
    written), or None when the run has no manifest; `tokenizer` (a spec of
    jobs.analysis.tokens) also measures the responses' lengths in tokens."""
    manifest = root.read_json(MANIFEST)
    if manifest is None:
        return None
    config = manifest.get("config") or {}
    bench_config, model_config = config.get("benchmarks") or {}, config.get("models") or {}
    implicit = manifest.get("implicit_scores", implicit_scores(config))  # runs from before it was recorded
    cells = manifest.get("cells") or {}
    done = [key.split("/", 1) for key, cell in sorted(cells.items()) if cell.get("status") in SCORED]
    views: dict[str, BenchmarkView] = {}
    for benchmark, model in done:
        if benchmark not in views:
            settings = bench_config.get(benchmark) or {}
            views[benchmark] = BenchmarkView(benchmark, settings.get("module") or benchmark,
                                             resamples=int(settings.get("bootstrap_resamples", 1000)))
    with ThreadPoolExecutor(READERS) as pool:
        metrics = list(pool.map(lambda cell: _cell_metrics(root, *cell), done))
        count_tokens = token_counter(tokenizer) if tokenizer else None
        folded = list(pool.map(lambda cell: _cell_view(root, *cell, cells["/".join(cell)], count_tokens), done))
    for (benchmark, model), (cell_metrics, unread), (cell_view, pairs, short) in zip(done, metrics, folded):
        view = views[benchmark]
        if cell_metrics is not None:
            view.metrics.append(cell_metrics)
        if short or unread:  # marked in every view of the report, and the command exits non-zero
            view.incomplete[model] = short or unread
            continue
        merge(view, model, cell_view)
        for item, pair in pairs.items():
            view.pairs.setdefault(item, pair)
        view.kinds[model] = str((model_config.get(model) or {}).get("kind") or "")
        if message := cells[f"{benchmark}/{model}"].get("message"):  # failed_errors: over its error budget
            view.over_budget[model] = message
        if model in implicit:
            view.implicit[model] = implicit[model]
    for problem in add_ensembles(root, views, run_ensembles(root, manifest)):
        print(f"ragjudge report: {problem}", file=sys.stderr)
    paths = {name: str(m["path"]) for name, m in model_config.items() if (m or {}).get("path")}
    board = leaderboard_of(list(views.values()), paths, tokenizer)
    report = Report(root.run, manifest, list(views.values()), board)
    board["cells_not_scored"] = report.not_scored
    return report


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def leaderboard_text(view: BenchmarkView, board: JsonObject) -> str:
    """The ranked models with interval, letter group, n and reliability columns, as fixed-width text."""
    columns = [c for c in COLUMNS if any(c in view.reliability.get(m["model"], {}) for m in board["models"])]
    # Implicit models: what their score is (alone, or a log-ratio against which reference), beside the name.
    implicit = ["implicit score"] if any(m["model"] in view.implicit for m in board["models"]) else []
    missing = ["missing"] if any(m.get("missing") for m in board["models"]) else []
    head = ["rank", "model", *implicit, "score", "95% CI", "group", "n", *missing, *columns]
    rows = [head]
    for m in board["models"]:
        ci = m["ci95"]
        extra = [_pct(view.reliability.get(m["model"], {}).get(c)) for c in columns]
        label = [view.implicit.get(m["model"], "-")] if implicit else []
        rows.append([str(m["rank"]), m["model"], *label, _pct(m["score"]),
                     f"[{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "-", m["group"], str(m["n"]),
                     *([str(m.get("missing", 0))] if missing else []), *extra])
    significant = sum(p["p_holm"] < 0.05 for p in board["pairs"])
    title = (f"{view.name}: leaderboard (score %, letter groups: same letter = no significant difference at "
             f"0.05 after Holm over {len(board['pairs'])} pairs; {significant} significant)")
    notes = "".join(f"\n  {note}" for note in error_notes(view, board))
    return title + "\n" + aligned(rows, left=2 + len(implicit)) + notes


def write_report(root: RunRoot, out: Callable[[str], None] = print, tokenizer: str | None = None) -> Report | None:
    """Write report/leaderboard.json and .csv, report/items.jsonl, report/index.html and its item viewer's data
    (report/viewer/) and print the tables; None: no manifest. `tokenizer`: also measure the responses in its
    tokens."""
    report = load_report(root, tokenizer)
    if report is None:
        return None
    tables = {view.name: paper_table(view.module, view.metrics) for view in report.views}
    boards = report.leaderboard["benchmarks"]
    for view in report.views:
        table = tables[view.name]
        if table.problem:
            print(f"ragjudge report: {view.name}: paper table unavailable: {table.problem}", file=sys.stderr)
        elif table.text:
            out(table.text + "\n")
        board = boards.get(view.name)
        if board:
            out(leaderboard_text(view, board) + "\n")
        for note in incomplete_notes(view):
            out(f"{view.name}: {note}\n")
    if missing := report.not_scored:
        out("Cells not scored (no numbers in this report; the run's last lines say how to finish them)\n" + "".join(
            f"  {c['benchmark']} x {c['model']}: {c['status']}" + (f": {c['reason']}" if c["reason"] else "") + "\n"
            for c in missing))
    if engines := engine_rows(report.manifest):
        out("Engines (one per distinct weights and settings for the sweep; seconds, tokens)\n"
            + aligned(engines, left=2) + "\n")
    if produced := model_provenance(report.manifest):
        out("Models (what produced their numbers: engine, dtype, the weights loaded, the attempts that wrote their "
            "cells and their versions)\n" + aligned(produced, left=2) + "\n")
    if mixed := mixed_versions(report.manifest):
        out("Cells answered by attempts of different versions (a resume after an upgrade: their answers mix both)\n"
            + "".join(f"  {cell}: {what}\n" for cell, what in mixed.items()))
    root.write_json(REPORT_LEADERBOARD, report.leaderboard)
    root.write_text(REPORT_LEADERBOARD_CSV, leaderboard_csv(report.leaderboard))
    root.write_text(REPORT_ITEMS, "".join(items_jsonl(board_items(view, boards.get(view.name)))
                                                  for view in report.views))
    notes = write_viewer(root, report)  # report/viewer/: the items, beside the page
    viewer = "" if notes is None else viewer_section(notes)
    root.write_text(REPORT_PAGE, render_page(report, tables, viewer))
    return report
