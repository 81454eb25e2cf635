"""RAG-RewardBench's validation hooks (what `ragjudge validate` scores a model on) with hand-computed
expectations: the first N well-formed pairs, the bundled sample, and a row's verdict and scores. Pure Python,
milliseconds."""
import json
from pathlib import Path

import pytest

from benchmarks import protocol

ROOT = Path(__file__).resolve().parents[3]
RB = protocol.benchmark("rag_rewardbench")


def good(name):
    return {"item_id": f"rag_rewardbench/{name}", "subset": "helpful-x", "error": None}


def bad(name):
    return {"item_id": f"rag_rewardbench/{name}", "subset": "", "error": f"{name}.jsonl: row 2: field 'chosen' missing"}


def test_the_first_n_well_formed_pairs_and_the_bad_rows_skipped_before_them():
    items = [good("a"), bad("b"), good("c"), bad("d"), good("e")]
    assert RB.validation_items(items, 2) == ([good("a"), good("c")], 1)  # d lies past the second pair
    assert RB.validation_items(items, 3) == ([good("a"), good("c"), good("e")], 2)
    assert RB.validation_items(items, 10) == ([good("a"), good("c"), good("e")], 2)  # fewer than asked
    assert RB.validation_items([bad("x")], 4) == ([], 1)
    assert RB.validation_items([], 4) == ([], 0)  # not None: this benchmark has validation pairs


def test_validation_items_read_no_further_than_they_need():
    def rows():
        yield good("a")
        yield good("b")
        raise AssertionError("read past the pairs asked for")

    assert RB.validation_items(rows(), 2) == ([good("a"), good("b")], 0)
    assert RB.validation_items(rows(), 0) == ([], 0)


def test_the_bundled_sample_is_the_six_appendix_d_pairs_and_a_bad_row_in_a_file_is_counted(tmp_path):
    sample = RB.validation_sample()
    assert sample == str(ROOT / "data" / "rag_rewardbench_appendix_d.jsonl")
    items, skipped = RB.validation_items(RB.load_items(sample), 32)
    rows = [json.loads(line) for line in Path(sample).read_text().splitlines()]
    first = [row["id"] for row in rows]
    assert ([item["item_id"] for item in items], skipped) == ([f"rag_rewardbench/{i}" for i in first], 0)
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in [rows[0], {**rows[1], "chosen": ""}, rows[2]]))
    items, skipped = RB.validation_items(RB.load_items(str(path)), 2)
    assert ([item["item_id"] for item in items], skipped) == ([f"rag_rewardbench/{first[0]}",
                                                              f"rag_rewardbench/{first[2]}"], 1)


def test_a_rows_verdict_and_scores_by_kind():
    scorer = {"item_id": "p", "score_chosen": 1.0, "score_reject": 0.5, "correct": 1.0}
    assert RB.validation_verdict(scorer, "discriminative") == (True, [1.0, 0.5])
    implicit = {"item_id": "p", "reward_chosen": -2.0, "reward_reject": -1.0, "correct": 0.0}
    assert RB.validation_verdict(implicit, "implicit") == (False, [-2.0, -1.0])
    judge = {"item_id": "p", "pick_cr": 1, "pick_rc": None, "logprobs_cr": [-0.5, -1.0], "logprobs_rc": None}
    assert RB.validation_verdict(judge, "generative") == ((1, None), [-0.5, -1.0, None, None])
    with pytest.raises(ValueError, match="no pair scores for 'retriever' models"):
        RB.validation_verdict(scorer, "retriever")
