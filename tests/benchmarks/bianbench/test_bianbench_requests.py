"""Bi'anBench requests: one per run, seeded from the item id, with the verdict prefill of the item's language."""
import pyarrow as pa
import pytest
from bianbench_cases import BIAN, DEFAULT, SAMPLE, options

from benchmarks.stats import stable_seed


def test_expand_one_request_per_run_with_deterministic_distinct_seeds_and_prefill_per_language():
    en, zh = (i for i in BIAN.load_items(SAMPLE) if i["task"] == "qa")
    requests = BIAN.expand(en, "generative", DEFAULT)
    assert [r["variant"] for r in requests] == ["run0", "run1", "run2"]
    assert [r["request_id"] for r in requests] == [f"bianbench/en/13#run{k}" for k in range(3)]
    assert [r["seed"] for r in requests] == [stable_seed("bianbench/en/13", f"run{k}") % 2**31 for k in range(3)]
    assert requests == BIAN.expand(en, "generative", DEFAULT)  # a rerun sends the same requests
    seeds = {r["seed"] for r in requests} | {r["seed"] for r in BIAN.expand(zh, "generative", DEFAULT)}
    assert len(seeds) == 6 and all(0 <= s < 2**31 for s in seeds)
    first = requests[0]
    assert (first["temperature"], first["top_p"], first["max_tokens"]) == (0.8, 0.7, 512)
    assert first["prefill"] == '{"SCORE": "' and first["candidates"] == ["PASS", "FAIL"]
    assert len(first["messages"]) == 1 and first["messages"][0]["role"] == "user"
    assert "QUESTION:Which group from the census is smaller: German or Irish?\n –\n DOCUMENT:As of the census" in (
        first["messages"][0]["content"])
    zh_first = BIAN.expand(zh, "generative", DEFAULT)[0]
    assert zh_first["prefill"] == '{"判断": "' and zh_first["candidates"] == ["通过", "失败"]
    assert "问题:夏威夷州毛伊县发生的野火导致多少人遇难" in zh_first["messages"][0]["content"]
    assert {tuple(sorted(r)) for r in requests + [zh_first]} == {tuple(sorted(first))}  # same columns everywhere
    assert pa.Table.from_pylist(requests + [zh_first]).schema.field("seed").type == pa.int64()
    with pytest.raises(ValueError, match="unknown model kind"):
        BIAN.expand(en, "discriminative", DEFAULT)


def test_greedy_is_one_run_at_temperature_zero_and_options_override_defaults():
    item = next(BIAN.load_items(SAMPLE))
    (greedy,) = BIAN.expand(item, "generative", options(greedy=True, runs=3))
    assert (greedy["variant"], greedy["temperature"], greedy["top_p"]) == ("run0", 0.0, 1.0)
    more = BIAN.expand(item, "generative", options(runs=5, temperature=0.5, max_tokens=64))
    assert len(more) == 5 and more[4]["temperature"] == 0.5 and more[4]["max_tokens"] == 64
    custom = BIAN.expand(item, "generative", options(templates={"qa": {"en": "Q={question}|A={answer}"}}))
    assert custom[0]["messages"][0]["content"] == "Q=Which group from the census is smaller: German or Irish?|A=German"
