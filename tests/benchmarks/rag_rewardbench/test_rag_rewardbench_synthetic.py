"""Synthetic RAG-RewardBench-shaped pairs: Table 4's sizes and mean lengths, real mtRAG passages, determinism,
labels that keep them out of every reported number. Pure Python; the full set takes a few seconds."""
import gzip
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import rag_rewardbench as rb
from benchmarks.mtrag.common import write_jsonl
from benchmarks.rag_rewardbench import synthetic
from jobs.flow.reducers import aggregate

ROOT = Path(__file__).resolve().parents[3]
# Table 4 as printed (Appendix A): category totals and the sizes and lengths of a few rows, typed in again
# here so a change to the data file shows.
TOTALS = {"helpful": 262, "reason": 306, "citation": 361, "harmless": 155, "abstain": 217, "conflict": 184}
ROWS = {"synthetic-helpful-multifieldqa": (78, 6435, 223, 249),
        "synthetic-citation-asqa": (100, 685, 339, 323),
        "synthetic-harmless-privacy": (90, 1260, 78, 63), "synthetic-abstain-nq-noise": (83, 3741, 78, 106)}


@pytest.fixture(scope="module")
def full():
    return list(synthetic.generate())


def close(measured: float, target: float, rel: float = 0.01, tokens: float = 1.0) -> bool:
    """Within 1% of the target, or within one token (a cut falls between words)."""
    return abs(measured - target) <= max(rel * target, tokens)


def test_table4_is_copied_whole():
    shapes = synthetic.table4()
    assert len(shapes) == 22 and sum(s.n for s in shapes) == 1485  # 22 rows of 18 source datasets
    assert {c: sum(s.n for s in shapes if s.category.lower() == c) for c in TOTALS} == TOTALS
    by_name = {s.name: (s.n, s.prompt, s.chosen, s.rejected) for s in shapes}
    assert {name: by_name[name] for name in ROWS} == ROWS


def test_full_set_has_table4_sizes_and_mean_lengths(full):
    means = synthetic.summary(full)
    for shape in synthetic.table4():
        m = means[shape.name]
        assert m["n"] == shape.n
        assert close(m["prompt"], shape.prompt) and close(m["chosen"], shape.chosen), shape.name
        assert close(m["reject"], shape.rejected), shape.name
    lengths = [synthetic.estimate_tokens(r["prompt"]) for r in full if r["subset"] == "synthetic-helpful-nq"]
    assert min(lengths) < 0.8 * 1352 < 1.2 * 1352 < max(lengths)  # items vary (spread 0.4), the mean holds


def test_every_row_is_labelled_synthetic_and_loads_as_a_pair(full, tmp_path):
    assert all(r["synthetic"] is True and r["id"].startswith("synthetic-")
               and rb.load.is_synthetic(r["subset"])
               and r["chosen_model"] == r["reject_model"] == "synthetic" for r in full)
    path = tmp_path / "pairs.jsonl"
    write_jsonl(str(path), full)
    items = list(rb.load_items(str(path)))
    assert len(items) == 1485 and not any(i["error"] for i in items)
    assert all(i["item_id"].startswith("rag_rewardbench/synthetic-") for i in items)


def test_prompts_are_built_from_real_mtrag_passages(full):
    row = full[0]
    corpus_file = ROOT / "data" / "mtrag" / "corpus" / f"{row['domain']}.jsonl.gz"
    with gzip.open(corpus_file, "rt", encoding="utf-8") as f:
        corpus = {p["_id"]: p for p in map(json.loads, f)}
    first = corpus[row["passages"][0]]
    head = f"## References\nReference [1]\nTitle: {first['title']}\nText: {first['text']}"
    assert row["prompt"].startswith(head)
    assert row["prompt"].endswith("## Response:") and "## Question: " in row["prompt"]
    assert row["chosen"].startswith(" ".join(first["text"].split())[:200])  # chosen: the prompt's own text
    assert all(pid in corpus for pid in row["passages"]) and len(row["passages"]) > 5  # a 6.4k-token prompt


def test_same_arguments_same_rows_and_a_capped_sample_is_a_prefix(full):
    capped = list(synthetic.generate(max_pairs=3))
    assert capped == list(synthetic.generate(max_pairs=3))
    assert len(capped) == 3 * 22
    by_id = {r["id"]: r for r in full}
    assert all(r == by_id[r["id"]] for r in capped)


def test_another_process_with_another_hash_seed_writes_the_same_rows(tmp_path):
    out = tmp_path / "pairs.jsonl"
    script = ROOT / "scripts" / "synthetic_rag_rewardbench.py"
    subprocess.run([sys.executable, str(script), str(out), "--max-pairs", "1", "--scale", "0.1"], check=True,
                   capture_output=True, env={**os.environ, "PYTHONHASHSEED": "7"})
    assert [json.loads(line) for line in out.read_text().splitlines()] == list(
        synthetic.generate(scale=0.1, max_pairs=1))


def test_scale_shrinks_every_length_by_one_factor():
    # One pair per subset: the items' spread factors (1 + d, 1 - d) cancel, so each mean is Table 4 x 0.25.
    rows = list(synthetic.generate(scale=0.25, max_pairs=2))
    means = synthetic.summary(rows)
    for shape in synthetic.table4():
        m = means[shape.name]
        assert close(m["prompt"], shape.prompt / 4) and close(m["chosen"], shape.chosen / 4, tokens=1.5)
        assert close(m["reject"], shape.rejected / 4, tokens=1.5)


def test_targets_pair_up_around_the_mean_and_an_odd_last_item_is_the_mean():
    shape = synthetic.SubsetShape("Helpful", "X", 3, 1000, 100, 50)
    a, b, last = (synthetic.targets(shape, i, 1.0, 0.4) for i in range(3))
    for field, mean in (("prompt", 1000), ("chosen", 100), ("reject", 50)):
        assert abs(a[field] + b[field] - 2 * mean) <= 1
        assert 0.6 * mean <= b[field] <= mean <= a[field] <= 1.4 * mean
    assert last == {"prompt": 1000, "chosen": 100, "reject": 50}
    assert synthetic.targets(shape, 0, 0.5, 0.0) == {"prompt": 500, "chosen": 50, "reject": 25}


def test_fit_takes_the_word_count_nearest_the_target():
    pieces = ["a", " bb", " ccc"]  # counted in characters: 1, 4, 8
    assert synthetic.fit(pieces, "", "", 3, len) == "a bb"  # |4 - 3| < |1 - 3|
    assert synthetic.fit(pieces, "", "", 2, len) == "a"  # |1 - 2| < |4 - 2|
    assert synthetic.fit(pieces, "<", ">", 100, len) == "<a bb ccc>"  # everything, still short
    assert synthetic.fit(pieces, "<", ">", 0, len) == "<>"  # never below head and tail


def test_character_estimate_is_a_quarter_of_the_characters():
    assert synthetic.estimate_tokens("x" * 10) == round(10 / 4) == 2 and synthetic.estimate_tokens("") == 0


def test_bad_arguments_fail_before_any_row():
    for kwargs in ({"scale": 0}, {"max_pairs": 0}, {"spread": 1.0}):
        with pytest.raises(ValueError):
            next(synthetic.generate(**kwargs))


def test_synthetic_subsets_are_in_no_column_and_named_in_metrics_and_table():
    rows = [{"item_id": f"h{i}", "subset": "helpful-a", "correct": v} for i, v in enumerate([1, 0])]
    rows += [{"item_id": f"s{i}", "subset": "synthetic-helpful-a", "correct": 1.0} for i in range(3)]
    m = aggregate(rb.RagRewardBench(), rows, resamples=50)
    assert m["columns"]["helpful"] == m["columns"]["overall"] == 0.5 and m["columns_n"]["overall"] == 2
    assert m["synthetic_subsets"] == ["synthetic-helpful-a"] and "unknown_subsets" not in m
    assert m["subsets"]["synthetic-helpful-a"]["n"] == 3  # per subset only, under its synthetic name
    only = aggregate(rb.RagRewardBench(), rows[2:], resamples=50)
    assert only["columns"]["overall"] is None or math.isnan(only["columns"]["overall"])
    text = rb.table_text([{**only, "model": "m", "kind": "discriminative"}])
    assert "SYNTHETIC" in text and "not a result" in text
