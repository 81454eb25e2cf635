"""The paper's tables from metrics.json: Table 2 (EN and ZH tasks), Table 3 (CF), Tables 17 and 18 (subsets),
and the verdict-reading rates this project adds."""
from __future__ import annotations

from typing import Any

from benchmarks.bianbench.fields import BENCHMARK, LANGUAGES, SPLITS, TASKS
from benchmarks.formatting import ordered, pct
from benchmarks.tables import grid, titled

TASK_TITLES = {"qa": "QA", "summarization": "Summarization", "data_to_text": "Data-to-Text",
               "translation": "Machine Translation"}
# Table 2 columns per split, and the subsets of Tables 17 and 18 in the paper's order.
TABLE2_TASKS = {"en": TASKS, "zh": ("qa", "summarization", "translation")}
PAPER_SUBSETS = {
    "en": {"qa": ("HaluEval_qa", "RAGTruth_qa", "FinanceBench", "DROP", "CovidQA", "PubMedQA", "ASQA", "IfQA"),
           "summarization": ("FIB", "HaluEval_sum"), "data_to_text": ("WebNLG", "RAGTruth_d2t"),
           "translation": ("PDC", "WMT21")},
    "zh": {"qa": ("CRUD_MDQA", "WebQA1.0", "LawBench_RC", "WebCPM-LFQA"),
           "summarization": ("CSDS", "CRUD_sum", "LawBench_sum"), "translation": ("PDC", "WMT21")},
}


def table_text(metrics: list[dict[str, Any]]) -> str:
    """Tables 2, 3, 17 and 18 of the paper from metrics.json dicts, one row per model: accuracy (%), mean ±
    sample std over runs in Tables 2 and 3, the mean in the subset tables; '-' where a model has no data."""
    name = titled("Bi'anBench", BENCHMARK, metrics)
    sections = [(f"{name}: accuracy %, mean ± std over runs. Task = mean of its subsets; Avg. = mean of all the "
                 "split's subsets (not of the tasks).")]
    for split, table in (("en", "Table 2, Bi'anBench_EN"), ("zh", "Table 2, Bi'anBench_ZH")):
        header = [TASK_TITLES[t] for t in TABLE2_TASKS[split]] + ["Avg."]
        rows = []
        for m in metrics:
            s = m.get("splits", {}).get(split)
            cells = [_pm(s["tasks"].get(t), s["tasks_std"].get(t)) if s else "-" for t in TABLE2_TASKS[split]]
            rows.append([_model(m)] + cells + [_pm(s["avg"], s["avg_std"]) if s else "-"])
        sections.append(grid(table, ["Model"] + header, rows))
    cf_rows = []
    for m in metrics:
        languages = m.get("splits", {}).get("cf", {}).get("languages", {})
        cf_rows.append([_model(m)] + [_pm(languages[lang]["avg"], languages[lang]["std"]) if lang in languages
                                      else "-" for lang in LANGUAGES])
    sections.append(grid("Table 3, Bi'anBench_CF", ["Model", "EN", "ZH"], cf_rows))
    splits = ordered(SPLITS, {s for m in metrics for s in m.get("splits", {})})
    titles = {"en": "Table 17, Bi'anBench_EN subsets", "zh": "Table 18, Bi'anBench_ZH subsets"}
    for split in splits:
        subsets = _subset_columns(split, [m.get("splits", {}).get(split, {}).get("subsets", {}) for m in metrics])
        rows = []
        for m in metrics:
            s = m.get("splits", {}).get(split)
            rows.append([_model(m)] + [pct(s["subsets"][c]["accuracy"]) if s and c in s["subsets"] else "-"
                                       for c in subsets] + [pct(s["avg"]) if s else "-"])
        sections.append(grid(titles.get(split, f"Bi'anBench_{split.upper()} subsets"),
                              ["Model"] + subsets + ["Average"], rows))
    for name, title in (("error_rate", "ERROR rate (verdict not parsed from the text, % of scored rows)"),
                        ("text_accuracy", "Accuracy of the verdict parsed from the text (paper protocol)"),
                        ("logprob_accuracy", "Accuracy of the log-prob verdict (read before the reasoning)")):
        rows = [[_model(m)] + [pct(m["splits"][s].get(name)) if s in m.get("splits", {}) else "-"
                               for s in splits] for m in metrics]
        sections.append(grid(title, ["Model"] + [s.upper() for s in splits], rows))
    return "\n\n".join(sections)


def _subset_columns(split: str, subset_maps: list[dict[str, Any]]) -> list[str]:
    """Subsets of a split in the paper's order (names matched ignoring case), then the others by task and name."""
    present = {name: entry.get("task", "") for subsets in subset_maps for name, entry in subsets.items()}
    order = [s for task in PAPER_SUBSETS.get(split, {}).values() for s in task]
    rank = {name.lower(): i for i, name in enumerate(order)}
    task_rank = {t: i for i, t in enumerate(TASKS)}
    return sorted(present, key=lambda s: (rank.get(s.lower(), len(order)), task_rank.get(present[s], len(TASKS)), s))


def _model(m: dict[str, Any]) -> str:
    return str(m.get("model") or "?")



def _pm(mean: float | None, std: float | None) -> str:
    return pct(mean) if mean is None or std is None else f"{100 * mean:.1f} ± {100 * std:.1f}"
