"""The paper's tables from metrics.json: Table 5 per setting (IDK-conditioned, then raw), the Appendix I
breakdowns and the counts."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.formatting import fixed, ordered
from benchmarks.mtrag.generation.options import BENCHMARK, SETTINGS
from benchmarks.mtrag.generation.summary import BREAKDOWN_ORDER
from benchmarks.tables import grid, titled

SETTING_TITLES = {"reference": "Reference", "reference_rag": "Reference+RAG", "full_rag": "Full RAG"}
TABLE5 = (("Ans. Acc.", "answerability_acc"), ("RB_alg", "rb_alg_idk"), ("RB_llm", "rb_llm_idk"), ("RL_F", "rl_f_idk"))
RAW = (("RB_alg raw", "rb_alg"), ("RB_llm raw", "rb_llm"), ("RL_F raw", "rl_f"), ("RougeL", "rouge_l"))
BREAKDOWNS = (("by_answerability", "Appendix I, Table 16(a): by answerability"),
              ("by_turn", "Appendix I, Table 16(b) / Figure 3(b): first turn vs later turns"),
              ("by_domain", "Appendix I, Table 16(c) / Figure 3(c): by domain"),
              ("by_question_type", "Appendix I.2: by question type (a task counts under each of its types)"),
              ("by_multi_turn", "Appendix I.2: by multi-turn type"))
SHORT = {"rb_alg_idk": "RB_alg", "rb_llm_idk": "RB_llm", "rl_f_idk": "RL_F"}


def table_text(metrics: list[dict[str, Any]]) -> str:
    """Table 5 (IDK-conditioned, the paper's numbers; then raw), one row per model and a column per setting,
    over the paper's classes; then the Appendix I breakdowns (conditioned), one row per model and setting;
    then counts (tasks, errors, NaN RL_F, unknown IDK). Two decimals like the paper; '-' where there is no
    value (RB_alg stays '-' until the encoder stage has filled it)."""
    settings_present = ordered(SETTINGS, {s for m in metrics for s in m.get("settings", {})})
    several = len({m.get("config") for m in metrics}) > 1  # e.g. the sample and the mini config of one run

    def _model(m: dict[str, Any]) -> str:
        name = str(m.get("model") or "?")
        return f"{name} ({m['config']})" if several and m.get("config") else name

    def by_setting(title: str, columns: Sequence[tuple[str, str]]) -> str:
        header = ["Model"] + [f"{name} {SETTING_TITLES.get(s, s)}" for name, _ in columns for s in settings_present]
        rows = [[_model(m)] + [fixed(m.get("settings", {}).get(s, {}).get("overall", {}).get(measure, {}).get("mean"))
                               for _, measure in columns for s in settings_present] for m in metrics]
        return grid(title, header, rows)

    sections = [
        (f"{titled('mtRAG generation', BENCHMARK, metrics)}. IDK-conditioned metrics (section 6.3.3) over "
         "ANSWERABLE, PARTIAL and UNANSWERABLE tasks; UNDERSPECIFIED and CONVERSATIONAL tasks appear only in the "
         "answerability breakdown."),
        by_setting("Table 5", TABLE5),
        by_setting("Table 5, raw (not conditioned on IDK)", RAW),
    ]
    pairs = [(m, s) for m in metrics for s in settings_present if s in m.get("settings", {})]
    for section, title in BREAKDOWNS:
        groups = ordered(BREAKDOWN_ORDER.get(section, ()),
                          {g for m, s in pairs for g in m["settings"][s].get(section, {})})
        header = ["Model [setting]"] + [f"{g} {SHORT[measure]}" for g in groups for measure in SHORT]
        rows = [[f"{_model(m)} [{SETTING_TITLES.get(s, s)}]"] + [
            fixed(m["settings"][s].get(section, {}).get(g, {}).get(measure, {}).get("mean"))
            for g in groups for measure in SHORT] for m, s in pairs]
        sections.append(grid(title, header, rows))
    rows = [[f"{_model(m)} [{SETTING_TITLES.get(s, s)}]"] + [
        str(m["settings"][s]["overall"].get(c, "-")) for c in ("n", "n_errors", "rl_f_nan", "idk_unknown",
                                                               "judge_failed")] for m, s in pairs]
    sections.append(grid("Counts over the paper's classes", ["Model [setting]", "tasks", "errors", "RL_F NaN",
                                                              "IDK unknown", "judge failed"], rows))
    return "\n\n".join(sections)
