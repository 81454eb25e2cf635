"""Items across models (issue 30, item 2): every model's outcome on every item, how hard each item is, and the
items that look mislabelled because the best models get them wrong.

- difficulty: the mean outcome of the models that scored the item; with 0/1 outcomes, the share of models that
  get it right (a both-order judge right in one order counts a half);
- top third: the best third of the leaderboard's models (rounded up), in its order;
- label-noise candidate: an item that at least MIN_TOP of the top third scored and whose mean outcome among
  them is below 0.5, i.e. with 0/1 outcomes, that most of them get wrong.
report/items.jsonl and `ragjudge items` hold one row per item; leaderboard.json a summary with the candidates.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.boundary_types import JsonObject
from benchmarks.tables import aligned
from jobs.analysis.leaderboard import Outcomes
from jobs.analysis.report_view import BenchmarkView

MIN_TOP = 2  # fewer top models than this make no candidate: one model's mistake is not a label's


def top_third(ranking: Sequence[str]) -> list[str]:
    """The best third of `ranking` (best first), rounded up."""
    return list(ranking[: math.ceil(len(ranking) / 3)])


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def item_rows(benchmark: str, outcomes: Mapping[str, Outcomes], subsets: Mapping[str, str],
              ranking: Sequence[str]) -> list[JsonObject]:
    """One row per item scored by any model of `ranking`, hardest first (then by id): benchmark, item_id,
    subset, difficulty, n_models, top_third_accuracy, label_noise and `correct` (model -> outcome, in
    `ranking` order, models that did not score the item left out)."""
    top = top_third(ranking)
    items = sorted({item for model in ranking for item in outcomes.get(model, {})})
    rows = []
    for item in items:
        correct = {m: outcomes[m][item] for m in ranking if item in outcomes.get(m, {})}
        top_values = [correct[m] for m in top if m in correct]
        top_accuracy = _mean(top_values)
        rows.append({"benchmark": benchmark, "item_id": item, "subset": subsets.get(item, ""),
                     "difficulty": _mean(list(correct.values())), "n_models": len(correct),
                     "top_third_accuracy": top_accuracy,
                     "label_noise": len(top_values) >= MIN_TOP and top_accuracy < 0.5, "correct": correct})
    rows.sort(key=lambda r: (r["difficulty"], r["item_id"]))
    return rows


def board_items(view: BenchmarkView, board: Mapping[str, Any] | None) -> list[JsonObject]:
    """item_rows of a benchmark's view, models ranked as its leaderboard ranks them."""
    ranking = [m["model"] for m in board["models"]] if board else []
    return item_rows(view.name, view.outcomes, view.subsets, ranking)


def items_summary(rows: list[JsonObject], ranking: Sequence[str]) -> JsonObject:
    """leaderboard.json's `items`: counts, the top third and the label-noise candidates (hardest first)."""
    return {"n": len(rows), "top_third": top_third(ranking),
            "label_noise": [{k: r[k] for k in ("item_id", "subset", "difficulty", "top_third_accuracy")}
                            for r in rows if r["label_noise"]]}


def items_jsonl(rows: list[JsonObject]) -> str:
    """The rows as JSONL text (report/items.jsonl, `ragjudge items --out`)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def format_items(rows: list[JsonObject], ranking: Sequence[str], hardest: int = 10) -> str:
    """What `ragjudge items` prints: counts, the label-noise candidates and the `hardest` items, as text."""
    benchmark = rows[0]["benchmark"] if rows else ""
    noise = [r for r in rows if r["label_noise"]]
    top = ", ".join(top_third(ranking))
    head = (f"{benchmark}: {len(rows)} items x {len(ranking)} models; top third: {top}; {len(noise)} label-noise "
            "candidates (most of the top third wrong)")
    lines = [head]
    for title, chosen in ((f"Label-noise candidates ({len(noise)})", noise),
                          (f"Hardest {min(hardest, len(rows))} items", rows[:hardest])):
        if chosen:
            table = [["item", "subset", "difficulty %", "models", "top third %"]]
            table += [[r["item_id"], r["subset"], _pct(r["difficulty"]), str(r["n_models"]),
                       _pct(r["top_third_accuracy"])] for r in chosen]
            lines.append(f"{title}\n{aligned(table, left=2)}")
    return "\n\n".join(lines)
