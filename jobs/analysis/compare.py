"""`ragjudge compare RUN_A RUN_B [--model M]`: did last night's change move anything?

For every (benchmark, model) cell finished in both runs: the score in each run, the difference, a paired test
on the items both runs scored (the same tests as the leaderboard, Holm over all compared cells), and the items
whose outcome changed ("flipped"). Scores are leaderboard scores (jobs.analysis.leaderboard), each over its own run's
items.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from benchmarks.boundary_types import JsonObject
from benchmarks.tables import aligned
from jobs.analysis.leaderboard import Outcomes, item_outcomes
from jobs.analysis.significance import holm, paired_test
from jobs.store import SCORED, RunRoot
from jobs.store.layout import MANIFEST

SHOWN = 20  # flipped items printed; the file holds all of them


@dataclass
class CellDiff:
    """One cell compared: score_a / score_b over each run's items, the test over the common ones."""

    benchmark: str
    model: str
    score_a: float | None
    score_b: float | None
    n: int  # items scored in both runs
    a_only: int  # common items better in run A
    b_only: int  # common items better in run B
    test: str
    p_value: float
    p_holm: float = 1.0
    flipped: list[JsonObject] = field(default_factory=list)

    @property
    def difference(self) -> float | None:
        return None if self.score_a is None or self.score_b is None else self.score_b - self.score_a


def _scored_cells(root: RunRoot) -> set[tuple[str, str]]:
    manifest = root.read_json(MANIFEST) or {}
    return {tuple(key.split("/", 1)) for key, cell in (manifest.get("cells") or {}).items()
            if cell.get("status") in SCORED}


def _read(root: RunRoot, benchmark: str, model: str) -> tuple[Outcomes, dict[str, str]]:
    wanted = {"item_id", "subset", "correct"}
    rows = root.read_rows("predictions", benchmark, model, columns=wanted.__contains__)
    return item_outcomes(rows)


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def compare_cell(benchmark: str, model: str, a: Outcomes, b: Outcomes, subsets: dict[str, str]) -> CellDiff:
    """The comparison of one cell's per-item outcomes in run A and run B."""
    common = sorted(set(a) & set(b))
    test = paired_test([a[i] for i in common], [b[i] for i in common],
                       seed_key=f"compare/{benchmark}/{model}")
    flipped = [{"benchmark": benchmark, "model": model, "item_id": i, "subset": subsets.get(i, ""), "a": a[i],
                "b": b[i]} for i in common if a[i] != b[i]]
    return CellDiff(benchmark, model, _mean(a.values()), _mean(b.values()), test.n, test.a_only, test.b_only,
                    test.test, test.p_value, flipped=flipped)


def compare_runs(run_a: RunRoot, run_b: RunRoot, model: str | None = None
                 ) -> tuple[list[CellDiff], list[str]]:
    """(the compared cells sorted by benchmark and model, notes on cells finished in one run only)."""
    cells_a, cells_b = _scored_cells(run_a), _scored_cells(run_b)
    if model is not None:
        cells_a = {c for c in cells_a if c[1] == model}
        cells_b = {c for c in cells_b if c[1] == model}
    notes = [f"{b} x {m}: finished in {run_a.run} only" for b, m in sorted(cells_a - cells_b)]
    notes += [f"{b} x {m}: finished in {run_b.run} only" for b, m in sorted(cells_b - cells_a)]
    diffs = []
    for benchmark, name in sorted(cells_a & cells_b):
        a, subsets = _read(run_a, benchmark, name)
        b, subsets_b = _read(run_b, benchmark, name)
        diffs.append(compare_cell(benchmark, name, a, b, {**subsets_b, **subsets}))
    for diff, adjusted in zip(diffs, holm([d.p_value for d in diffs])):
        diff.p_holm = adjusted
    return diffs, notes


def _pct(value: float | None, sign: bool = False) -> str:
    return "-" if value is None else f"{100 * value:{'+' if sign else ''}.1f}"


def format_comparison(diffs: list[CellDiff], notes: list[str], name_a: str, name_b: str,
                      shown: int = SHOWN) -> str:
    """The comparison table, then the first `shown` flipped items."""
    rows = [["benchmark", "model", name_a, name_b, "diff", "n", f"{name_a} better", f"{name_b} better",
             "test", "p", "p (Holm)"]]
    for d in diffs:
        rows.append([d.benchmark, d.model, _pct(d.score_a), _pct(d.score_b), _pct(d.difference, sign=True),
                     str(d.n), str(d.a_only), str(d.b_only), d.test, f"{d.p_value:.3g}", f"{d.p_holm:.3g}"])
    title = (f"{name_b} vs {name_a} (scores %, paired tests on the items both runs scored, Holm over "
             f"{len(diffs)} cells)")
    lines = [title, aligned(rows, left=2)]
    flipped = [f for d in diffs for f in d.flipped]
    head = f"\n{len(flipped)} items flipped"
    if flipped:
        head += f"; the first {shown}:" if len(flipped) > shown else ":"
    lines.append(head)
    lines += [f"  {f['benchmark']} x {f['model']}: {f['item_id']} ({f['subset']}) "
              f"{f['a']:.3g} -> {f['b']:.3g}" for f in flipped[:shown]]
    lines += notes
    return "\n".join(lines)


def write_flips(diffs: list[CellDiff], path: str) -> int:
    """Every flipped item as one JSON line; returns how many."""
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for d in diffs:
            for f in d.flipped:
                out.write(json.dumps(f, ensure_ascii=False) + "\n")
                count += 1
    return count

