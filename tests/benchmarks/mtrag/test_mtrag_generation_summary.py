"""mtRAG generation's rows to metrics (docs/protocols.md 3): measures, the reducer's groups, Table 5 and the
Appendix I breakdowns on hand-made rows, the encoder stage's scores written into rows, and the CLI."""
import json
import math
import re

import pytest
from mtrag_tasks import OPTS, answer, g, item_of, task

from benchmarks.mtrag.generation.rows import add_bert_scores
from benchmarks.stats import bootstrap_ci
from jobs.flow.reducers import aggregate


def row(item_id, answerability, turn_group, collection, question_type, multi_turn, setting="reference", **values):
    base = {"item_id": item_id, "benchmark": "mtrag_generation", "subset": answerability,
            "answerability": answerability, "turn_group": turn_group, "collection": collection,
            "question_type": question_type, "multi_turn": multi_turn, "setting": setting, "error": None,
            "rl_f_status": "scored", "idk_word": "no", "judge_errors": None}
    for name in ("correct", "rb_alg", "rb_alg_idk", "rb_llm", "rb_llm_idk", "rl_f", "rl_f_idk", "rouge_l", "idk"):
        base[name] = None
    return {**base, **values}


ROWS = [
    row("a1", "ANSWERABLE", "first", "clapnq", "Factoid", "N/A", correct=1.0, idk=0.0, rb_llm=0.8, rb_llm_idk=0.8,
        rl_f=1.0, rl_f_idk=1.0, rouge_l=0.5),
    row("a2", "ANSWERABLE", "later", "fiqa", "Explanation+Factoid", "Follow-up", correct=0.0, idk=1.0, idk_word="yes",
        rb_llm=0.6, rb_llm_idk=0.0, rl_f=math.nan, rl_f_status="no_statements", rl_f_idk=0.0, rouge_l=0.3),
    row("a3", "UNANSWERABLE", "later", "govt", "Factoid", "Clarification", correct=1.0, idk=1.0, idk_word="yes",
        rb_llm=0.4, rb_llm_idk=1.0, rl_f=0.5, rl_f_idk=1.0, rouge_l=0.1),
    row("a4", "UNDERSPECIFIED", "later", "cloud", "Keyword", "Follow-up", correct=None, idk=None, idk_word="unsure",
        rb_llm=0.9, rb_llm_idk=0.9, rl_f=1.0, rl_f_idk=1.0, rouge_l=0.2, judge_errors="rb_llm@b: HTTP 500"),
    row("a5", "PARTIAL", "first", "clapnq", "Composite", "N/A", error="generation failed: engine"),
    row("b1", "ANSWERABLE", "first", "clapnq", "Factoid", "N/A", setting="full_rag", correct=1.0, idk=0.0,
        rb_llm=0.5, rb_llm_idk=0.5, rl_f=0.25, rl_f_idk=0.25, rouge_l=0.4),
]


def test_measures_leave_nan_out_and_count_it():
    assert g.measures(ROWS[4]) == {"failed": 1.0}
    values = g.measures(ROWS[1])
    assert (values["rl_f"], values["rl_f_nan"], values["rl_f_idk"], values["answerability_acc"]) == (None, 1.0, 0.0,
                                                                                                    0.0)
    assert g.measures(ROWS[3])["idk_unknown"] == 1.0 and g.measures(ROWS[3])["judge_failed"] == 1.0
    assert g.measures(ROWS[0])["rb_alg"] is None and g.measures(ROWS[0])["rl_f_nan"] == 0.0
    assert g.group_key(ROWS[1]) == "reference|ANSWERABLE|later|fiqa|Explanation+Factoid|Follow-up"


def test_summarize_table5_and_breakdowns_on_hand_made_rows():
    metrics = aggregate(g, ROWS, resamples=200)
    assert (metrics["benchmark"], metrics["n"], metrics["n_errors"]) == ("mtrag_generation", 5, 1)
    assert list(metrics["settings"]) == ["reference", "full_rag"]
    ref = metrics["settings"]["reference"]
    overall = ref["overall"]  # a1, a2, a3 (and a5's error); a4 is UNDERSPECIFIED, reported on its own
    assert (overall["n"], overall["n_errors"], overall["rl_f_nan"], overall["idk_unknown"]) == (3, 1, 1, 0)
    expected = {"answerability_acc": (2 / 3, 3), "rb_llm": (0.6, 3), "rb_llm_idk": (0.6, 3), "rl_f": (0.75, 2),
                "rl_f_idk": (2 / 3, 3), "rouge_l": (0.3, 3), "rb_alg": (None, 0), "rb_alg_idk": (None, 0)}
    for measure, (mean, n) in expected.items():
        assert overall[measure]["n"] == n, measure
        assert overall[measure]["mean"] == (None if mean is None else pytest.approx(mean)), measure
    assert overall["rb_llm_idk"]["ci95"] == bootstrap_ci([0.8, 0.0, 1.0], "mtrag_generation/reference/overall/"
                                                         "rb_llm_idk", 200)
    # bootstrap_resamples: 0 turns intervals off; the means stay
    quiet = aggregate(g, ROWS, resamples=0)["settings"]["reference"]["overall"]
    assert quiet["rb_llm_idk"] == {**overall["rb_llm_idk"], "ci95": None}
    by = ref["by_answerability"]
    assert list(by) == ["ANSWERABLE", "PARTIAL", "UNANSWERABLE", "UNDERSPECIFIED"]
    assert by["ANSWERABLE"]["rb_llm_idk"]["mean"] == pytest.approx(0.4)
    assert (by["PARTIAL"]["n"], by["PARTIAL"]["n_errors"]) == (0, 1)
    assert by["UNDERSPECIFIED"]["rb_llm"]["mean"] == 0.9 and by["UNDERSPECIFIED"]["answerability_acc"]["n"] == 0
    assert by["UNDERSPECIFIED"]["judge_failed"] == 1
    assert {k: v["rb_llm_idk"]["mean"] for k, v in ref["by_turn"].items()} == {"first": 0.8, "later": 0.5}
    assert {k: v["rb_llm_idk"]["mean"] for k, v in ref["by_domain"].items()} == {"clapnq": 0.8, "fiqa": 0.0,
                                                                               "govt": 1.0}
    assert ref["by_domain"]["clapnq"]["n_errors"] == 1  # a5
    assert {k: v["rb_llm_idk"]["mean"] for k, v in ref["by_question_type"].items()} == {
        "Composite": None, "Explanation": 0.0, "Factoid": pytest.approx(0.6)}  # a2 counts under both its types
    assert {k: v["rb_llm_idk"]["mean"] for k, v in ref["by_multi_turn"].items()} == {
        "N/A": 0.8, "Clarification": 1.0, "Follow-up": 0.0}
    assert metrics["settings"]["full_rag"]["overall"]["rl_f"]["mean"] == 0.25


def test_table_text_lays_out_table5_per_setting_and_the_breakdowns():
    metrics = aggregate(g, ROWS, resamples=50)
    text = g.table_text([{**metrics, "model": "judge-x", "kind": "generative", "note": ""}])
    lines = text.splitlines()
    header = lines[lines.index("Table 5") + 1]
    assert re.split(r"\s{2,}", header) == ["Model", "Ans. Acc. Reference", "Ans. Acc. Full RAG", "RB_alg Reference",
                                           "RB_alg Full RAG", "RB_llm Reference", "RB_llm Full RAG",
                                           "RL_F Reference", "RL_F Full RAG"]
    assert re.split(r"\s{2,}", lines[lines.index("Table 5") + 2]) == [
        "judge-x", "0.67", "1.00", "-", "-", "0.60", "0.50", "0.67", "0.25"]
    assert "Appendix I, Table 16(a): by answerability" in text and "UNDERSPECIFIED RB_llm" in text
    counts = lines[lines.index("Counts over the paper's classes") + 2]
    assert re.split(r"\s{2,}", counts) == ["judge-x [Reference]", "3", "1", "1", "0", "0"]


def test_add_bert_scores_fills_rb_alg_and_its_conditioned_value():
    answerable = row("a1", "ANSWERABLE", "first", "clapnq", "Factoid", "N/A", idk=0.0, rouge_l=0.5)
    filled = add_bert_scores(answerable, 0.5, [0.2, None, -0.4], "microsoft/deberta-xlarge-mnli@40")
    assert (filled["bert_recall"], filled["bert_kprec"], filled["bert_encoder"]) == (
        0.5, 0.2, "microsoft/deberta-xlarge-mnli@40")
    assert filled["rb_alg"] == pytest.approx(0.6) and filled["rb_alg_idk"] == pytest.approx(0.6)
    unanswerable = row("a3", "UNANSWERABLE", "later", "govt", "Factoid", "N/A", idk=1.0, rouge_l=0.1)
    filled = add_bert_scores(unanswerable, 0.1, [], "minilm")
    assert (filled["bert_kprec"], filled["rb_alg"], filled["rb_alg_idk"]) == (None, 0.0, 1.0)
    assert add_bert_scores(ROWS[4], 0.5, [0.1], "minilm") == ROWS[4]


def test_text_pairs_are_the_response_against_the_reference_and_each_passage(tmp_path):
    item = item_of(tmp_path, task())
    (generation,) = g.expand(item, "generative", OPTS)
    (scored,) = g.combine(item, [answer(generation, "Paris.")], "generative", OPTS)
    pairs = g.text_pairs(item, scored, OPTS)
    assert [(p["pair_id"].split("#")[1], p["candidate"], p["reference"]) for p in pairs] == [
        ("bert_recall", "Paris.", "The capital of France is Paris."),
        ("bert_kprec/0", "Paris.", "Paris is the capital of France."),
        ("bert_kprec/1", "Paris.", "France is in Europe.")]
    assert len({p["pair_id"] for p in pairs}) == 3 and all(p["pair_id"].startswith(item["item_id"]) for p in pairs)
    (failed,) = g.combine(item, [answer(generation, None, error="engine died")], "generative", OPTS)
    assert g.text_pairs(item, failed, OPTS) == [] and g.add_text_pair_scores(failed, {}, "enc") == failed
    # R = (0.5 + 1)/2 = 0.75, E = (max(0.2, NaN -> 0) + 1)/2 = 0.6, L = RougeL("Paris.", reference) = 2/7:
    # RB_alg = 3RLE / (RL + RE + LE)
    scores = {p["pair_id"]: {"precision": v, "recall": r, "f1": 0.0}
              for p, v, r in zip(pairs, (0.9, 0.2, math.nan), (0.5, 0.1, 0.1))}
    filled = g.add_text_pair_scores(scored, scores, "minilm@6, not rescaled")
    r, e, rouge = 0.75, 0.6, 2 / 7
    assert filled["rouge_l"] == pytest.approx(rouge)
    assert (filled["bert_recall"], filled["bert_kprec"], filled["bert_encoder"]) == (0.5, 0.2, "minilm@6, not rescaled")
    assert filled["rb_alg"] == pytest.approx(3 * r * rouge * e / (r * rouge + r * e + rouge * e))
    # an empty response side (NaN recall): RB_alg stays unknown unless RougeL already makes it 0
    nan_recall = {**scores, pairs[0]["pair_id"]: {"precision": math.nan, "recall": math.nan, "f1": math.nan}}
    unknown = g.add_text_pair_scores(scored, nan_recall, "enc")
    assert unknown["bert_recall"] is None and unknown["rb_alg"] is None and unknown["rb_alg_idk"] is None
    zero = g.add_text_pair_scores({**scored, "rouge_l": 0.0}, nan_recall, "enc")
    assert zero["rb_alg"] == 0.0


def test_combined_rows_store_as_parquet_and_aggregate_through_the_cli(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jobs.cli import main

    item = item_of(tmp_path, task())
    (generation,) = g.expand(item, "generative", OPTS)
    answers = [answer(generation, "Paris.")]
    texts = {"rb_llm": "Rating: [[9]]", "idk": "no", "statements": '{"statements": []}'}
    answers += [answer(r, texts[r["variant"]]) for r in g.followup(item, answers, "generative", OPTS)]
    scored = g.combine(item, answers, "generative", OPTS)
    failed = g.combine(item_of(tmp_path, task(tid="c7<::>2"), "f.jsonl"), [], "generative", OPTS)
    path = tmp_path / "predictions.parquet"
    pq.write_table(pa.Table.from_pylist(scored + failed), path)
    assert main(["aggregate", "--benchmark", "mtrag_generation", "--predictions", str(path), "--out",
                 str(tmp_path / "out")]) == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    overall = metrics["settings"]["reference"]["overall"]
    assert (metrics["n"], metrics["n_errors"], overall["rl_f_nan"], overall["rb_llm"]["mean"]) == (1, 1, 1, 0.9)
    capsys.readouterr()


def _mean(value):
    return {"mean": value}


# Issue 64: the whole text, laid out by hand, of two models under two configs (so each name carries its config;
# one without a name): settings in the paper's order (Reference before Full RAG), one it lacks ("custom") last;
# each breakdown's groups in the paper's order (ANSWERABLE before UNANSWERABLE, first before later, govt before
# cloud, not alphabetically), an unknown domain after them; a model without settings in Table 5 only; a missing
# number as "-", in the tables and in the counts.
TABLE_INPUT = [
    {"model": "judge-a", "config": "sample", "settings": {
        "full_rag": {"overall": {"answerability_acc": _mean(0.5), "rb_llm_idk": _mean(0.25), "rl_f_idk": _mean(1.0),
                                 "rb_llm": _mean(0.125), "rl_f": {"mean": None}, "rouge_l": _mean(0.333),
                                 "n": 4, "n_errors": 1, "rl_f_nan": 0, "idk_unknown": 2},
                     "by_answerability": {"UNANSWERABLE": {"rl_f_idk": _mean(0.0)},
                                          "ANSWERABLE": {"rb_llm_idk": _mean(1.0)}},
                     "by_turn": {"later": {"rb_llm_idk": _mean(0.5)}, "first": {"rl_f_idk": _mean(0.75)}},
                     "by_domain": {"zzz": {"rb_alg_idk": _mean(0.1)}, "govt": {"rb_llm_idk": _mean(0.2)},
                                   "cloud": {"rl_f_idk": _mean(0.3)}}},
        "reference": {"overall": {"answerability_acc": _mean(1.0), "rb_alg_idk": _mean(0.6), "n": 2,
                                  "judge_failed": 1},
                      "by_question_type": {"Factoid": {"rl_f_idk": _mean(0.9)}}}}},
    {"config": "mini", "settings": {
        "custom": {"overall": {"rl_f_idk": _mean(0.05), "n": 1},
                   "by_multi_turn": {"Follow-up": {"rb_llm_idk": _mean(0.0)}}}}},
    {"model": "no-settings", "config": "mini"},
]

TABLE_EXPECTED = """\
mini, sample (mtRAG generation). IDK-conditioned metrics (section 6.3.3) over ANSWERABLE, PARTIAL and UN\
ANSWERABLE tasks; UNDERSPECIFIED and CONVERSATIONAL tasks appear only in the answerability breakdown.

Table 5
Model               Ans. Acc. Reference  Ans. Acc. Full RAG  Ans. Acc. custom  RB_alg Reference  RB_alg \
Full RAG  RB_alg custom  RB_llm Reference  RB_llm Full RAG  RB_llm custom  RL_F Reference  RL_F Full RAG\
  RL_F custom
judge-a (sample)                   1.00                0.50                 -              0.60         \
       -              -                 -             0.25              -               -           1.00\
            -
? (mini)                              -                   -                 -                 -         \
       -              -                 -                -              -               -              -\
         0.05
no-settings (mini)                    -                   -                 -                 -         \
       -              -                 -                -              -               -              -\
            -

Table 5, raw (not conditioned on IDK)
Model               RB_alg raw Reference  RB_alg raw Full RAG  RB_alg raw custom  RB_llm raw Reference  \
RB_llm raw Full RAG  RB_llm raw custom  RL_F raw Reference  RL_F raw Full RAG  RL_F raw custom  RougeL R\
eference  RougeL Full RAG  RougeL custom
judge-a (sample)                       -                    -                  -                     -  \
               0.12                  -                   -                  -                -          \
       -             0.33              -
? (mini)                               -                    -                  -                     -  \
                  -                  -                   -                  -                -          \
       -                -              -
no-settings (mini)                     -                    -                  -                     -  \
                  -                  -                   -                  -                -          \
       -                -              -

Appendix I, Table 16(a): by answerability
Model [setting]               ANSWERABLE RB_alg  ANSWERABLE RB_llm  ANSWERABLE RL_F  UNANSWERABLE RB_alg\
  UNANSWERABLE RB_llm  UNANSWERABLE RL_F
judge-a (sample) [Reference]                  -                  -                -                    -\
                    -                  -
judge-a (sample) [Full RAG]                   -               1.00                -                    -\
                    -               0.00
? (mini) [custom]                             -                  -                -                    -\
                    -                  -

Appendix I, Table 16(b) / Figure 3(b): first turn vs later turns
Model [setting]               first RB_alg  first RB_llm  first RL_F  later RB_alg  later RB_llm  later \
RL_F
judge-a (sample) [Reference]             -             -           -             -             -        \
   -
judge-a (sample) [Full RAG]              -             -        0.75             -          0.50        \
   -
? (mini) [custom]                        -             -           -             -             -        \
   -

Appendix I, Table 16(c) / Figure 3(c): by domain
Model [setting]               govt RB_alg  govt RB_llm  govt RL_F  cloud RB_alg  cloud RB_llm  cloud RL_\
F  zzz RB_alg  zzz RB_llm  zzz RL_F
judge-a (sample) [Reference]            -            -          -             -             -           \
-           -           -         -
judge-a (sample) [Full RAG]             -         0.20          -             -             -        0.3\
0        0.10           -         -
? (mini) [custom]                       -            -          -             -             -           \
-           -           -         -

Appendix I.2: by question type (a task counts under each of its types)
Model [setting]               Factoid RB_alg  Factoid RB_llm  Factoid RL_F
judge-a (sample) [Reference]               -               -          0.90
judge-a (sample) [Full RAG]                -               -             -
? (mini) [custom]                          -               -             -

Appendix I.2: by multi-turn type
Model [setting]               Follow-up RB_alg  Follow-up RB_llm  Follow-up RL_F
judge-a (sample) [Reference]                 -                 -               -
judge-a (sample) [Full RAG]                  -                 -               -
? (mini) [custom]                            -              0.00               -

Counts over the paper's classes
Model [setting]               tasks  errors  RL_F NaN  IDK unknown  judge failed
judge-a (sample) [Reference]      2       -         -            -             1
judge-a (sample) [Full RAG]       4       1         0            2             -
? (mini) [custom]                 1       -         -            -             -"""


def test_the_whole_table_text_of_two_configs_matches_the_hand_laid_out_text():
    assert g.table_text(TABLE_INPUT) == TABLE_EXPECTED


def test_one_config_names_no_config_and_a_breakdown_without_groups_keeps_its_rows():
    metrics = [{"model": "solo", "config": "mtrag_generation", "settings": {"reference": {"overall": {"n": 0}}}}]
    assert g.table_text(metrics) == """\
mtRAG generation. IDK-conditioned metrics (section 6.3.3) over ANSWERABLE, PARTIAL and UNANSWERABLE task\
s; UNDERSPECIFIED and CONVERSATIONAL tasks appear only in the answerability breakdown.

Table 5
Model  Ans. Acc. Reference  RB_alg Reference  RB_llm Reference  RL_F Reference
solo                     -                 -                 -               -

Table 5, raw (not conditioned on IDK)
Model  RB_alg raw Reference  RB_llm raw Reference  RL_F raw Reference  RougeL Reference
solo                      -                     -                   -                 -

Appendix I, Table 16(a): by answerability
Model [setting]
solo [Reference]

Appendix I, Table 16(b) / Figure 3(b): first turn vs later turns
Model [setting]
solo [Reference]

Appendix I, Table 16(c) / Figure 3(c): by domain
Model [setting]
solo [Reference]

Appendix I.2: by question type (a task counts under each of its types)
Model [setting]
solo [Reference]

Appendix I.2: by multi-turn type
Model [setting]
solo [Reference]

Counts over the paper's classes
Model [setting]   tasks  errors  RL_F NaN  IDK unknown  judge failed
solo [Reference]      0       -         -            -             -"""
