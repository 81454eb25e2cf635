"""The named rows (benchmarks.row_types): the key check names the row, the keys and who sent it; and every
benchmark's requests, items and prediction rows have the keys the contract promises the other side."""
from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from benchmarks import protocol, row_types
from benchmarks.options import typed_options
from benchmarks.row_types import (
    ANSWER_BASE_KEYS,
    ANSWER_KEYS,
    REQUEST_KEYS,
    ROW_KEYS,
    RecordError,
    answer_keys,
    check_keys,
    checked,
    missing_keys,
)

REPO = Path(__file__).resolve().parents[2]
SAMPLES = sorted((REPO / "conf" / "benchmarks").glob("*_sample.yaml"))


def _answer(**extra):
    return {"request_id": "rrb/1#cr", "item_id": "rrb/1", "subset": "s", "variant": "cr", "error": None, **extra}


def test_the_key_sets_are_the_records_required_keys():
    assert REQUEST_KEYS == {"request_id", "item_id", "subset", "variant", "messages"}
    assert ANSWER_BASE_KEYS == {"request_id", "item_id", "subset", "variant", "error"}
    assert ROW_KEYS == {"item_id", "benchmark", "subset", "correct", "error"}
    computed = row_types.PromptAnswer.__optional_keys__  # what an engine computes for a prompt
    assert all(keys <= computed for keys in ANSWER_KEYS.values())
    assert row_types.VERDICT_KEYS | row_types.REFERENCE_KEYS <= computed
    assert computed | row_types.PART_KEYS <= row_types.Answer.__optional_keys__


def test_a_complete_row_passes_and_none_counts_as_present():
    rows = [_answer(text=None, candidate_logprobs=None)]
    check_keys(rows, answer_keys("judge", verdict=True), "engine vllm (model judge)", "answer")
    assert missing_keys(rows, answer_keys("judge", verdict=True)) == []
    assert list(checked(rows, answer_keys("judge"), "engine vllm", "answer")) == rows


def test_a_missing_key_is_named_with_the_row_and_the_engine():
    rows = [_answer(text="Choose 1", candidate_logprobs=[-0.1, -2.0]), _answer(request_id="rrb/1#rc", text="x")]
    assert missing_keys(rows, answer_keys("judge", verdict=True)) == [(1, "candidate_logprobs")]
    with pytest.raises(RecordError) as caught:
        check_keys(rows, answer_keys("judge", verdict=True), "engine vllm (model judge)", "answer")
    assert str(caught.value) == ("engine vllm (model judge): answer request_id 'rrb/1#rc' lacks 'candidate_logprobs' "
                                 "(it has error, item_id, request_id, subset, text, variant)")


def test_every_row_that_lacks_a_key_is_counted_and_a_row_without_ids_by_its_position():
    rows = [{"item_id": "a"}, {"request_id": "r", "item_id": "b", "messages": []}, {}]
    with pytest.raises(RecordError, match=r"^bench: request item_id 'a' lacks 'messages', 'request_id', 'subset', "
                                          r"'variant' \(it has item_id\); 3 of 3 rows lack keys$"):
        check_keys(rows, REQUEST_KEYS, "bench", "request")
    with pytest.raises(RecordError, match=r"^bench: request row 0 lacks .* \(it has no keys\)$"):
        check_keys([{}], REQUEST_KEYS, "bench", "request")


def test_a_stream_is_checked_as_it_comes():
    seen = []
    stream = checked(iter([_answer(score=1.0), _answer(request_id="r2")]), answer_keys("classify"), "engine x",
                     "answer")
    with pytest.raises(RecordError, match="engine x: answer request_id 'r2' lacks 'score'"):
        for row in stream:
            seen.append(row["request_id"])
    assert seen == ["rrb/1#cr"]


def test_an_unknown_task_is_refused():
    with pytest.raises(ValueError, match="unknown engine task 'score'; expected one of classify, judge, logprobs"):
        answer_keys("score")


def _stand_in_answer(request, kind):
    """An answer with the columns of the kind's engine task, as an engine writes them."""
    task = {"discriminative": "classify", "generative": "judge", "implicit": "logprobs"}[kind]
    answer = {k: v for k, v in request.items() if k not in ("messages", "prefill", "candidates")}
    answer.update(error=None, n_tokens=10, truncated=False)
    answer.update({"classify": {"score": float(len(request["request_id"]))},
                   "judge": {"text": "Choose 1", "candidate_logprobs": [-0.1, -2.0]},
                   "logprobs": {"logp_sum": -3.0, "logp_mean": -1.0, "n_response_tokens": 3}}[task])
    return answer


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_every_benchmark_writes_the_keys_it_promises(path):
    """Items, every round of requests (answered by stand-ins) and the combined rows of each sample config."""
    config = OmegaConf.to_container(OmegaConf.load(path))
    spec = protocol.benchmark(config["module"])
    options = typed_options(spec.Options, config.get("options"))
    items = [item for data in config["data"] for item in spec.load_items(str(REPO / data))][:3]
    assert items and missing_keys(items, row_types.Item.__required_keys__) == []
    for kind in spec.kinds:
        for item in items:
            answers, requests = [], spec.expand(item, kind, options)
            while requests:
                check_keys(requests, REQUEST_KEYS, spec.name, "request")
                answers += [_stand_in_answer(r, kind) for r in requests]
                done = {a["request_id"] for a in answers}
                requests = [r for r in spec.followup(item, answers, kind, options) if r["request_id"] not in done]
            combined = spec.combine(item, answers, kind, options)
            check_keys(combined if isinstance(combined, list) else [combined], ROW_KEYS, spec.name, "row")
