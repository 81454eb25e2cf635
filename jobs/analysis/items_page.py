"""The report's items section of a benchmark (jobs.analysis.items): the label-noise candidates, a models x items
heat map (models in leaderboard order, items easiest first) and a sortable table of every item. The heat map is
inline SVG drawn here, not by matplotlib: 45 models x 1,485 items are 67k cells, so each model's row is one
path per outcome class, its runs of equal cells merged (items sorted by difficulty make the runs long)."""
from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from jobs.analysis.html_table import number_cell, table
from jobs.analysis.items import board_items
from jobs.analysis.report_view import BenchmarkView

CLASSES = {"right": "#2e7d32", "partly": "#f2c94c", "wrong": "#c62828"}  # outcome 1, in between, 0
ROW_PX, LABEL_PX, WIDTH_PX = 10, 200, 900  # one model's row, the name column, the cells' width at most


def outcome_class(value: float | None) -> str | None:
    """right (1), wrong (0), partly (in between: a judge right in one order), None: not scored."""
    if value is None:
        return None
    return "right" if value >= 1.0 else "wrong" if value <= 0.0 else "partly"


def _runs(classes: list[str | None], wanted: str) -> list[tuple[int, int]]:
    """(first column, length) of each run of `wanted` in a row."""
    runs, start = [], None
    for column, cls in enumerate([*classes, None]):
        if cls == wanted and start is None:
            start = column
        elif cls != wanted and start is not None:
            runs.append((start, column - start))
            start = None
    return runs


def heatmap(models: list[str], rows: list[Mapping[str, Any]], title: str) -> str:
    """Models x items as an inline SVG; grey where a model did not score an item."""
    items = sorted(rows, key=lambda r: (-r["difficulty"], r["item_id"]))  # easiest first
    cell = max(1.0, min(8.0, WIDTH_PX / max(1, len(items))))
    width, height = LABEL_PX + cell * len(items), ROW_PX * len(models)
    parts = [(f'<svg class="plot" role="img" aria-label="{html.escape(title)}" viewBox="0 0 {width:g} '
              f'{height + 14}" width="{width:g}" height="{height + 14}" xmlns="http://www.w3.org/2000/svg">'),
             f'<rect x="{LABEL_PX}" y="0" width="{cell * len(items):g}" height="{height}" fill="#dddddd"/>']
    for r, model in enumerate(models):
        y = r * ROW_PX
        parts.append(f'<text x="{LABEL_PX - 4}" y="{y + ROW_PX - 2}" font-size="9" text-anchor="end">'
                     f'{html.escape(model)}</text>')
        classes = [outcome_class(row["correct"].get(model)) for row in items]
        for name, color in CLASSES.items():
            path = "".join(f"M{LABEL_PX + start * cell:g},{y}h{length * cell:g}v{ROW_PX - 1}h{-length * cell:g}z"
                           for start, length in _runs(classes, name))
            if path:
                parts.append(f'<path fill="{color}" d="{path}"><title>{html.escape(model)}: {name}</title></path>')
    legend = " ".join(f"{name}: {color}" for name, color in CLASSES.items())
    parts.append(f'<text x="{LABEL_PX}" y="{height + 11}" font-size="9">items, easiest first ({len(items)}); '
                 f'{html.escape(legend)}; grey: not scored</text></svg>')
    return "".join(parts)


def _item_row(row: Mapping[str, Any], benchmark: str) -> str:
    noise = "yes" if row["label_noise"] else ""
    viewer = html.escape(urlencode({"benchmark": benchmark, "item": row["item_id"]}))  # jobs.analysis.viewer_page
    return (f"<tr><td class='l'><a href='#items?{viewer}'>{html.escape(row['item_id'])}</a></td>"
            f"<td class='l'>{html.escape(row['subset'])}</td>"
            + number_cell(row["difficulty"]) + f"<td data-v='{row['n_models']}'>{row['n_models']}</td>"
            + number_cell(row["top_third_accuracy"]) + f"<td class='l'>{noise}</td></tr>")


def items_section(view: BenchmarkView, board: Mapping[str, Any] | None) -> str:
    """The section's HTML; "" for a benchmark with fewer than two models (nothing to compare)."""
    if not board or len(board["models"]) < 2:
        return ""
    rows = board_items(view, board)
    models = [m["model"] for m in board["models"]]
    noise = [r for r in rows if r["label_noise"]]
    header = ["item", "subset", "difficulty %", "models", "top third %", "label noise?"]
    top = board.get("items", {}).get("top_third", [])
    return "\n".join([
        ("<h3>Items across models</h3><p class='note'>Difficulty: the mean outcome of the models that scored the "
         "item (with 0/1 outcomes, the share that got it right). Label-noise candidates: items that at least two "
         f"of the top third of the models ({html.escape(', '.join(top))}) scored and that most of them got wrong "
         f"(their mean outcome below 50%). {len(noise)} of {len(rows)} items.</p>"),
        table(header, [_item_row(r, view.name) for r in noise]) if noise else "",
        heatmap(models, rows, f"{view.name}: models x items"),
        f"<details><summary>All {len(rows)} items</summary>{table(header, [_item_row(r, view.name) for r in rows])}</details>"])
