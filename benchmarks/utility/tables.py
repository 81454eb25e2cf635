"""The paper's tables from metrics.json: Table 3 (sets and rankings per condition and dataset), the Figure 5
scores by ground-truth position, and Table 4 (GTU answers per evidence source)."""
from __future__ import annotations

from typing import Any

from benchmarks.formatting import pct, pct_ci
from benchmarks.tables import aligned, titled
from benchmarks.utility import gtu
from benchmarks.utility.options import BENCHMARK
from benchmarks.utility.prompts import RANK_FORMS, SET_FORMS
from benchmarks.utility.summary import RANK_METRICS, SET_METRICS

METRIC_TITLES = {"precision": "P", "recall": "R", "f1": "F1", "ndcg_1": "NDCG@1", "ndcg_5": "NDCG@5",
                 "mrr_5": "MRR@5"}


def table_text(metrics: list[dict[str, Any]]) -> str:
    """Table 3 layout: one row per model x condition, sets (P, R, F1) and ranks (NDCG@1, NDCG@5, MRR@5) in
    separate blocks, a column group per dataset, percentages with their 95% intervals; then the Figure 5
    table: the score by position of the ground-truth passage; then Table 4 (GTU answers per evidence
    source)."""
    blocks = [block for block in (*condition_tables(metrics), position_table(metrics)) if block]
    if qa_rows := gtu.qa_table(metrics, pct_ci):
        blocks.append("GTU answers on each evidence source (Table 4), % macro over questions [95% CI]; "
                      "passages: mean number handed over\n" + aligned(qa_rows, left=2))
    notes = [f"  {m.get('model', '?')}: {m['n_errors']} condition rows not scored (failed requests); "
             "see errors/" for m in metrics if m.get("n_errors")]
    notes += [f"  {m['model']}: {m['note']}" for m in metrics if m.get("note")]
    return "\n\n".join(blocks + (["Notes:\n" + "\n".join(notes)] if notes else []))


def condition_tables(metrics: list[dict[str, Any]]) -> list[str]:
    """Table 3: the set forms' block, then the rank forms' block; a block without conditions is left out."""
    blocks = []
    for title, forms, names in (("Evidence sets (pointwise, listwise-set)", SET_FORMS, SET_METRICS),
                                ("Evidence rankings (pairwise, listwise-rank)", RANK_FORMS, RANK_METRICS)):
        entries = [(m, c, e) for m in metrics for c, e in sorted(m.get("conditions", {}).items())
                   if e["form"] in forms]
        if not entries:
            continue
        subsets = sorted({s for _, _, e in entries for s in e["subsets"]})
        head = ["Model", "Condition", *(f"{s} {METRIC_TITLES[n]}" for s in subsets for n in names), "n",
                "parse fail"]
        rows = []
        for m, condition, entry in entries:
            cells = [pct_ci(entry["subsets"].get(s, {}), n) for s in subsets for n in names]
            rows.append([m.get("model", "?"), condition, *cells, str(entry["all"]["n"]),
                         pct(entry["all"].get("parse_failure_rate"))])
        name = titled("Utility judgments", BENCHMARK, metrics)
        blocks.append(f"{name}: {title}, % macro over questions [95% CI]\n" + aligned([head, *rows], left=2))
    return blocks


def position_table(metrics: list[dict[str, Any]]) -> str | None:
    """Figure 5 as a table: per model, condition and dataset, the score by ground-truth position; None without
    listwise rows."""
    position_rows = []
    for m in metrics:
        for condition, entry in sorted(m.get("conditions", {}).items()):
            for subset, cell in sorted(entry["subsets"].items()):
                if cell.get("by_gt_position"):
                    position_rows.append((m.get("model", "?"), condition, subset, entry["metric"],
                                          cell["by_gt_position"]))
    if not position_rows:
        return None
    positions = sorted({int(p) for *_, by in position_rows for p in by}, key=int)
    head = ["Model", "Condition", "Dataset", "Metric"] + [f"@{p}" for p in positions]
    rows = [[model, condition, subset, METRIC_TITLES[metric],
             *[pct(by.get(str(p), {}).get("value")) for p in positions]]
            for model, condition, subset, metric, by in position_rows]
    return ("Score by position of the ground-truth passage in the listwise input (Figure 5), %\n"
            + aligned([head, *rows], left=4))
