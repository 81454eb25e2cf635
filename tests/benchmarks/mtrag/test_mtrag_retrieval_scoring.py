"""mtRAG retrieval scores (docs/protocols.md 3) with hand-computed expectations: trec_eval's ranking rule, one
query by hand, the authors' per-collection means and weighting, and the `ragjudge aggregate` contract on the
released qrels. Pure Python, seconds.
"""
import json
import math
import random
import subprocess
import sys

import pytest
import pytrec_eval
from bundled_data import GENERATION, REPO, RETRIEVAL
from mtrag_runs import row, write_lines

from benchmarks.mtrag import common as mc
from benchmarks.mtrag.retrieval import data as r
from benchmarks.mtrag.retrieval import scoring as m
from jobs.cli import main

# ---- ranking and metrics


def test_trec_order_breaks_ties_by_document_id_descending_at_float32_precision():
    # 'b' > 'a' > 'Z' and '9' > '10' as strcmp sees them; 0.3 + 1e-8 is 0.3 in float32, 0.3 + 1e-7 is not.
    assert [d for d, _ in m.trec_order({"a": 1.0, "b": 1.0, "Z": 1.0, "c": 2.0})] == ["c", "b", "a", "Z"]
    assert [d for d, _ in m.trec_order({"10": 5, "9": 5})] == ["9", "10"]
    assert [d for d, _ in m.trec_order({"a": 0.3 + 1e-8, "b": 0.3})] == ["b", "a"]
    assert [d for d, _ in m.trec_order({"a": 0.3 + 1e-7, "b": 0.3})] == ["a", "b"]


def test_pytrec_eval_ranks_ties_as_trec_order_does():
    """Recall@k from trec_order, counted by hand, equals pytrec_eval's on rankings full of ties."""
    rng = random.Random(7)
    for case in range(200):
        docs = [f"d{i}" for i in rng.sample(range(40), 15)]
        scores = {d: rng.choice([1.0, 2.0, 3.0, 0.5 + 1e-9, 0.5]) for d in docs}
        relevant = set(rng.sample(docs, rng.randint(1, 6)))
        evaluated = pytrec_eval.RelevanceEvaluator({"q": dict.fromkeys(relevant, 1)}, {"recall.1,3,5,10"}).evaluate(
            {"q": scores})["q"]
        order = [d for d, _ in m.trec_order(scores)]
        for k in (1, 3, 5, 10):
            assert evaluated[f"recall_{k}"] == len(relevant & set(order[:k])) / len(relevant), (case, k)


def test_one_query_by_hand_ties_self_hit_and_duplicates():
    qrels = {"c<::>2": {"a": 1, "b": 1}}
    # Drop the self-hit c<::>2; 'a' appears twice and its last score (2.0) wins over 7.0. Ranking: x (3.0), then
    # the 2.0 tie by id descending: y, b, a. Relevant at ranks 3 and 4.
    tied = row("c::2", "clapnq", ("c<::>2", 9.0), ("a", 7.0), ("x", 3.0), ("b", 2.0), ("y", 2.0), ("a", 2.0))
    per_query, metrics = m.evaluate([tied], qrels)
    idcg = 1 + 1 / math.log2(3)  # two relevant documents at ranks 1 and 2
    expected = {"recall_1": 0.0, "recall_3": 0.5, "recall_5": 1.0, "recall_10": 1.0,
                "ndcg_cut_1": 0.0,
                "ndcg_cut_3": (1 / math.log2(4)) / idcg,  # 0.5 / 1.63093 = 0.306574
                "ndcg_cut_5": (1 / math.log2(4) + 1 / math.log2(5)) / idcg,  # 0.930677 / 1.63093 = 0.570642
                "ndcg_cut_10": (1 / math.log2(4) + 1 / math.log2(5)) / idcg}
    assert per_query == [{"task_id": "c::2", "Collection": "clapnq", "retriever_scores": pytest.approx(expected)}]
    assert metrics["collections"]["clapnq"] == {**{k: round(v, 5) for k, v in expected.items()}, "count": 1,
                                                "scored": 1}
    assert metrics["collections"]["clapnq"]["ndcg_cut_3"] == 0.30657
    # Had the first score of 'a' (7.0) won, or ties gone by id ascending (x, a, b, y), recall@1 or @3 would differ.
    first_wins = row("c<::>2", "clapnq", ("a", 7.0), ("x", 3.0))
    ascending = row("c<::>2", "clapnq", ("x", 3.0), ("a", 2.0), ("b", 1.9), ("y", 1.8))
    assert m.evaluate([first_wins], qrels)[0][0]["retriever_scores"]["recall_1"] == 0.5
    assert m.evaluate([ascending], qrels)[0][0]["retriever_scores"]["recall_3"] == 1.0


def test_missing_queries_rows_outside_qrels_and_the_all_weighting():
    qrels = {f"c{i}<::>2": {"p": 1} for i in range(1, 5)} | {"g<::>1": {"p": 1}, "absent<::>3": {"p": 1}}
    hit, miss = ("p", 1.0), ("n", 1.0)
    rows = [row("c1<::>2", "mt-rag-clapnq-elser-512-100-20240503", hit),  # clapnq: recall@1 1 and 0 -> 0.5
            row("c2<::>2", "clapnq", miss),
            row("c3::2", "ibmcloud", hit),  # cloud: 1 scored (1.0) + 1 row the qrels lack (count 2)
            row("zz<::>2", "cloud", hit),
            row("c4<::>2", "govt", miss), row("c4<::>2", "govt", hit),  # a repeated task: its last row counts
            row("g<::>1", "govt")]  # an empty ranking scores 0
    per_query, metrics = m.evaluate(rows, qrels)
    cols = metrics["collections"]
    assert {name: (c["recall_1"], c["count"], c["scored"]) for name, c in cols.items()} == {
        "clapnq": (0.5, 2, 2), "cloud": (1.0, 2, 1), "govt": (0.5, 2, 2)}
    # all = (0.5 * 2 + 1.0 * 2 + 0.5 * 2) / 6 = 0.6667; a mean over the 5 scored queries would be 3/5 = 0.6.
    assert metrics["all"]["recall_1"] == pytest.approx(4 / 6)
    assert (metrics["all"]["count"], metrics["all"]["scored"], metrics["n"]) == (6, 5, 5)
    assert metrics["missing_from_run"] == 1  # absent<::>3, not counted as zero
    assert metrics["benchmark"] == "mtrag_retrieval"
    assert metrics["duplicate_task_ids"] == 1
    assert [q["retriever_scores"].get("recall_1") for q in per_query] == [1.0, 0.0, 1.0, None, 1.0, 1.0, 0.0]
    assert per_query[3]["retriever_scores"] == {}  # as the official script writes a task the qrels lack
    # by turn: g<::>1 is turn 1 (0.0); the four scored turn-2 tasks give 1, 0, 1, 1.
    assert (metrics["by_turn"]["first"]["recall_1"], metrics["by_turn"]["first"]["scored"]) == (0.0, 1)
    assert (metrics["by_turn"]["later"]["recall_1"], metrics["by_turn"]["later"]["scored"]) == (0.75, 4)


def test_collection_means_are_rounded_to_5_decimals_before_weighting():
    qrels = {"a<::>1": {"p": 1, "q": 1, "r": 1}, "b<::>1": {"p": 1}, "c<::>1": {"p": 1}}
    rows = [row("a<::>1", "fiqa", ("p", 1)), row("b<::>1", "govt", ("p", 1)), row("c<::>1", "govt", ("p", 1))]
    metrics = m.evaluate(rows, qrels)[1]
    assert metrics["collections"]["fiqa"]["recall_1"] == 0.33333  # 1/3, rounded
    assert metrics["all"]["recall_1"] == pytest.approx((0.33333 * 1 + 1.0 * 2) / 3, abs=1e-15)  # 0.7777767


def test_a_collection_without_scored_queries_has_no_means_and_no_weight():
    metrics = m.evaluate([row("a<::>1", "fiqa", ("p", 1)), row("b<::>1", "govt", ("p", 1))], {"a<::>1": {"p": 1}})[1]
    assert metrics["collections"]["govt"] == {**dict.fromkeys(m.MEASURES), "count": 1, "scored": 0}
    assert metrics["all"]["recall_1"] == 1.0 and metrics["all"]["count"] == 2


# ---- the CLI contract


def test_cli_scores_a_perfect_run_on_the_real_qrels(tmp_path, capsys):
    qrels_paths = [r.qrels_path(RETRIEVAL, name) for name in mc.DOMAINS]
    rows = []
    for name, path in zip(mc.DOMAINS, qrels_paths):
        for tid, docs in r.load_qrels(path).data.items():
            rows.append(mc.run_row(tid, name, [(pid, 1.0) for pid in docs]))  # every relevant passage, tied
    mc.write_jsonl(str(tmp_path / "run.jsonl"), rows)
    argv = ["aggregate", "--benchmark", "mtrag_retrieval", "--predictions", str(tmp_path / "run.jsonl"),
            "--out", str(tmp_path / "out")]
    for path in qrels_paths:
        argv += ["--qrels", path]
    assert main(argv) == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert json.loads(capsys.readouterr().out)["all"] == metrics["all"]
    per_query = [json.loads(line) for line in (tmp_path / "out" / "per_query.jsonl").read_text().splitlines()]
    assert len(per_query) == 777 and all(set(q) == {"task_id", "Collection", "retriever_scores"} for q in per_query)
    assert all(list(q["retriever_scores"]) == list(m.MEASURES) for q in per_query)
    # Every task has at most 9 relevant passages, all ranked first: recall@10 and every nDCG are 1. Recall@1 is
    # the mean of 1/n over tasks with n relevant passages; clapnq has 27, 69, 64, 29, 11, 6, 2 tasks with
    # n = 1..7: (27 + 69/2 + 64/3 + 29/4 + 11/5 + 6/6 + 2/7) / 208 = 93.5690 / 208 = 0.44985.
    # Recall@3 = mean of min(3, n)/n: (27 + 69 + 64 + 29*3/4 + 11*3/5 + 6*3/6 + 2*3/7) / 208 = 192.207/208.
    clapnq = metrics["collections"]["clapnq"]
    assert (clapnq["recall_1"], clapnq["recall_3"], clapnq["count"]) == (0.44985, 0.92407, 208)
    assert {c: metrics["collections"][c]["count"] for c in mc.DOMAINS} == {"clapnq": 208, "cloud": 188, "fiqa": 180,
                                                                            "govt": 201}
    for scores in [*metrics["collections"].values(), metrics["all"]]:
        assert scores["recall_10"] == 1.0 and all(scores[f"ndcg_cut_{k}"] == 1.0 for k in m.K_VALUES)
    assert metrics["all"]["count"] == 777 and metrics["missing_from_run"] == 0 and metrics["n_errors"] == 0
    # all = count-weighted collection means (each rounded to 5 decimals).
    assert metrics["all"]["recall_1"] == pytest.approx(sum(
        metrics["collections"][c]["recall_1"] * metrics["collections"][c]["count"] for c in mc.DOMAINS) / 777)
    assert metrics["by_turn"]["first"]["scored"] == 102 and metrics["by_turn"]["later"]["scored"] == 675


def test_cli_command_on_part_of_a_domain_with_short_names_and_double_colon_ids(tmp_path):
    qrels = r.load_qrels(r.qrels_path(RETRIEVAL, "govt")).data
    first = next(t for t in sorted(qrels) if len(qrels[t]) == 1)  # one relevant passage: recall@1 can be 1
    second = next(t for t in sorted(qrels) if t != first)
    run = [row(first.replace("<::>", "::"), "govt", (next(iter(qrels[first])), 1.0)),
           row(second, "govt", ("not-relevant", 5.0))]
    path = write_lines(tmp_path / "run.jsonl", [json.dumps(x) for x in run] + ["not json"])
    done = subprocess.run([sys.executable, "-m", "jobs", "aggregate", "--benchmark", "mtrag_retrieval",
                           "--predictions", path, "--qrels", r.qrels_path(RETRIEVAL, "govt"),
                           "--out", str(tmp_path / "out")], check=False, capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert f"{path}:3: not valid JSON" in done.stderr
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    # one perfect task (1.0) and one with nothing relevant (0.0): 0.5; the other 199 govt tasks are missing.
    assert metrics["collections"] == {"govt": {**dict.fromkeys(m.MEASURES, 0.5), "count": 2, "scored": 2}}
    assert (metrics["missing_from_run"], metrics["n_errors"]) == (199, 1)
    per_query = [json.loads(line) for line in (tmp_path / "out" / "per_query.jsonl").read_text().splitlines()]
    assert [q["task_id"] for q in per_query] == [first.replace("<::>", "::"), second]


def test_cli_scores_the_official_sample_run(tmp_path):
    """sample_data's 10 tasks (`::` ids, a lower-case `collection`, NaN fields), their contexts scored."""
    sample = str(GENERATION / "sample_responses_10.jsonl")
    qrels = {}
    argv = ["aggregate", "--benchmark", "mtrag_retrieval", "--predictions", sample, "--out", str(tmp_path)]
    for name in mc.DOMAINS:
        argv += ["--qrels", r.qrels_path(RETRIEVAL, name)]
        qrels |= r.load_qrels(r.qrels_path(RETRIEVAL, name)).data
    assert main(argv) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    # clapnq turns 2-8 have 3, 4, 2, 3, 2, 2, 2 relevant passages, govt turns 1-2 have 2 and 3; clapnq turn 1 is
    # unanswerable (no qrels) but still counts as a clapnq row. Each task's contexts are its relevant passages,
    # ranked first, so every nDCG is 1 and recall@k = min(k, n) / n.
    assert [len(qrels[f"dd6b6ffd177f2b311abe676261279d2f<::>{t}"]) for t in range(2, 9)] == [3, 4, 2, 3, 2, 2, 2]
    assert [len(qrels[f"5b2404d71f9ff7edabddb3b1a8b329e7<::>{t}"]) for t in (1, 2)] == [2, 3]
    clapnq, govt = metrics["collections"]["clapnq"], metrics["collections"]["govt"]
    assert (clapnq["count"], clapnq["scored"], govt["count"], govt["scored"]) == (8, 7, 2, 2)
    assert clapnq["recall_1"] == 0.41667  # (1/3 + 1/4 + 1/2 + 1/3 + 1/2 + 1/2 + 1/2) / 7 = 2.91667 / 7
    assert clapnq["recall_3"] == 0.96429  # (1 + 3/4 + 5 * 1) / 7 = 6.75 / 7
    assert govt["recall_1"] == 0.41667  # (1/2 + 1/3) / 2
    assert metrics["all"]["recall_3"] == pytest.approx((0.96429 * 8 + 1.0 * 2) / 10)  # 0.971432
    assert all(metrics["all"][f"ndcg_cut_{k}"] == 1.0 for k in m.K_VALUES)
    first = json.loads((tmp_path / "per_query.jsonl").read_text().splitlines()[0])
    assert first == {"task_id": "dd6b6ffd177f2b311abe676261279d2f::1",
                     "Collection": "mt-rag-clapnq-elser-512-100-20240503", "retriever_scores": {}}


def test_cli_needs_qrels_for_mtrag_retrieval(tmp_path, capsys):
    run = write_lines(tmp_path / "run.jsonl", [json.dumps(row("a<::>1", "govt"))])
    assert main(["aggregate", "--benchmark", "mtrag_retrieval", "--predictions", run]) == 2
    assert "needs --qrels" in capsys.readouterr().err
    assert main(["aggregate", "--benchmark", "mtrag_retrieval", "--predictions", run, "--qrels",
                 str(tmp_path / "none.tsv")]) == 2
    assert "none.tsv: no such file" in capsys.readouterr().err


def test_no_rows_score_none_not_a_division_by_zero():
    per_query, metrics = m.evaluate([], {})
    assert per_query == [] and metrics["benchmark"] == "mtrag_retrieval" and metrics["n"] == 0
    assert metrics["all"] == {**dict.fromkeys(m.MEASURES), "count": 0, "scored": 0}
