"""A thinking judge behind an OpenAI-compatible API, scripted per prompt on 127.0.0.1, through a whole sweep of
RAG-RewardBench and Bi'anBench (issue 66): (a) a finished trace naming the wrong verdict and an answer naming the
right one, (b) a trace naming a verdict and an answer naming none, (c) a trace cut before its end, (d) the trace
in `reasoning_content`, apart from the content, and for RAG-RewardBench (e) such a trace cut at the token limit
and (f) a trace naming the right choice and an answer naming the wrong one. Each verdict is hand-computed from
the answer after the trace; reading the whole text would score (b) and (c) as right."""
from __future__ import annotations

import json
import threading
from typing import ClassVar

import pytest
from bundled_data import DATA, REPO
from loopback import JsonHandler, chat_completion, serving
from sweeps import SAMPLE

from benchmarks import rag_rewardbench as rb

pytestmark = pytest.mark.integration

WRONG_RIGHT = {"cr": (2, 1), "rc": (1, 2)}  # order -> (the rejected response's position, the chosen one's)
# usage.completion_tokens_details.reasoning_tokens per case, both orders; (c)'s reply reports none
REASONING_TOKENS = {"a": 1, "b": 2, "c": None, "d": 3, "e": 4, "f": 10}


def _rag_rewardbench_replies() -> dict[str, dict]:
    """The last user message of each of the sample's 12 requests -> the reply the server gives it."""
    replies = {}
    items = list(rb.load_items(str(SAMPLE)))
    assert len(items) == 6
    for case, item in zip("abcdef", items):
        for request in rb.expand(item, "generative"):
            wrong, right = WRONG_RIGHT[request["variant"]]
            content, trace, finish = {
                "a": (f"<think>Choose {wrong}</think>\n\nChoose {right}", None, "stop"),
                "b": (f"<think>Choose {right}</think>\n\nBoth answers are fine.", None, "stop"),
                "c": (f"<think>Choose {right} since it cites", None, "length"),
                "d": (f"Choose {right}", f"Choose {wrong}?", "stop"),
                "e": ("", f"Choose {right} since it", "length"),
                "f": (f"<think>Choose {right}</think>Choose {wrong}", None, "stop"),
            }[case]
            replies[request["messages"][-1]["content"]] = {"content": content, "trace": trace, "finish": finish,
                                                           "reasoning_tokens": REASONING_TOKENS[case]}
    return replies


# Bi'anBench's four Table 10 items, told apart by a phrase of their context; every run gets the same reply.
BIANBENCH_REPLIES = {
    "census of 2000": {"content": '<think>{"SCORE": "PASS"}</think>{"REASONING": "the count is off", "SCORE": "FAIL"}',
                       "trace": None, "finish": "stop"},  # (a), label FAIL
    "夏威夷": {"content": '<think>{"判断": "失败"}</think>我无法判断。', "trace": None, "finish": "stop"},  # (b), 失败
    "Alhambra": {"content": '<think>{"SCORE": "PASS"} because', "trace": None, "finish": "length"},  # (c), PASS
    "multimedia": {"content": '{"推理过程": "准确", "判断": "通过"}', "trace": '{"判断": "失败"}',
                   "finish": "stop"},  # (d), 通过
}


class _Thinking(JsonHandler):
    replies: ClassVar[dict[str, dict]] = {}
    seen: ClassVar[list[dict]] = []

    def do_POST(self) -> None:  # http.server's method name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Thinking.seen.append(body)
        prompt = body["messages"][-1]["content"]
        reply = self.replies.get(prompt) or next(r for phrase, r in BIANBENCH_REPLIES.items() if phrase in prompt)
        completion = chat_completion(body["model"], reply["content"])
        choice = completion["choices"][0]
        choice["finish_reason"] = reply["finish"]
        if reply["trace"] is not None:
            choice["message"]["reasoning_content"] = reply["trace"]
        if reply.get("reasoning_tokens") is not None:
            completion["usage"]["completion_tokens_details"] = {"reasoning_tokens": reply["reasoning_tokens"]}
        self._reply(200, completion)


def _sweep(tmp_path) -> str:
    path = tmp_path / "conf" / "sweeps" / "thinking.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join([
        "name: thinking",
        "benchmarks:",
        f'  - {{name: rag_rewardbench, module: rag_rewardbench, data: ["{SAMPLE}"], bootstrap_resamples: 0}}',
        (f'  - {{name: bianbench, module: bianbench, data: ["{DATA / "bianbench_table10.jsonl"}"], '
         f'bootstrap_resamples: 0, options: {{templates_file: "{REPO / "conf/prompts/bianbench_table12.yaml"}", '
         'runs: 3, temperature: 0.8, top_p: 0.7, max_tokens: 64, greedy: false}}'),
        "models:",
        "  - {name: thinker, path: thinker, kind: api, engine: http, max_new_tokens: 64, num_cpus: 0.25,",
        "     api: {base_env: RAGJUDGE_TEST_THINKING_BASE, key_env: RAGJUDGE_TEST_THINKING_KEY},",
        "     reasoning: {api_field: reasoning_content, enable_thinking: true}}",
        f'storage: {{run: thinking, root: "{tmp_path / "results"}"}}']) + "\n")
    return str(path)


def test_verdicts_come_from_after_the_trace_and_cut_traces_are_counted(ray_session, tmp_path, monkeypatch):
    from jobs.loading import load_sweep
    from jobs.store.run_root import RunRoot
    from jobs.sweep.pipeline import run_sweep

    _Thinking.replies, _Thinking.seen = _rag_rewardbench_replies(), []
    with serving(_Thinking, threading.Event()) as base:
        monkeypatch.setenv("RAGJUDGE_TEST_THINKING_BASE", base)
        monkeypatch.setenv("RAGJUDGE_TEST_THINKING_KEY", "sk-test")
        lines: list[str] = []
        outcomes = {o.benchmark: o for o in run_sweep(load_sweep(_sweep(tmp_path)), log=lines.append)}
    assert {b: o.status for b, o in outcomes.items()} == {"rag_rewardbench": "done", "bianbench": "done"}
    assert len(_Thinking.seen) == 12 + 12
    assert all(body["chat_template_kwargs"] == {"enable_thinking": True} for body in _Thinking.seen)
    run = RunRoot(str(tmp_path / "results"), "thinking")

    items = [item["item_id"] for item in rb.load_items(str(SAMPLE))]
    rows = {r["item_id"]: r for r in run.read_rows("predictions", "rag_rewardbench", "thinker")}
    assert [rows[i]["correct"] for i in items] == [1.0, 0.5, 0.5, 1.0, 0.5, 0.0]  # (a) .. (f)
    assert rows[items[0]]["text_cr"] == "Choose 1" and rows[items[2]]["text_cr"] is None
    answers = {a["request_id"]: a for a in run.read_rows("requests", "rag_rewardbench", "thinker")}
    assert answers[f"{items[0]}#cr"]["thinking"] == "Choose 2"
    assert answers[f"{items[3]}#rc"]["thinking"] == "Choose 1?"  # from reasoning_content
    assert [answers[f"{i}#cr"]["thinking_finished"] for i in items] == [True, True, False, True, False, True]
    assert [answers[f"{i}#rc"]["thinking_tokens"] for i in items] == [1, 2, None, 3, 4, 10]
    # 1, 1, 2, 2, 3, 3, 4, 4, 10, 10: (c)'s two traces reported no tokens, which is not zero tokens
    tokens = {"counted": 10, "mean": 4.0, "p50": 3.0, "p95": 10.0}
    # items' tokens, both orders: (a) 2, (b) 4, (d) 6, (e) 8, (f) 20, (c) uncounted; linear quartile edges 4, 6, 8
    quartiles = [{"tokens_from": 2.0, "tokens_to": 4.0, "n": 2, "accuracy": 0.75},
                 {"tokens_from": 4.0, "tokens_to": 6.0, "n": 1, "accuracy": 1.0},
                 {"tokens_from": 6.0, "tokens_to": 8.0, "n": 1, "accuracy": 0.5},
                 {"tokens_from": 8.0, "tokens_to": 20.0, "n": 1, "accuracy": 0.0}]
    assert outcomes["rag_rewardbench"].metrics["thinking"] == {"traces": 12, "unfinished": 4,
                                                               "unfinished_thinking_rate": 4 / 12,
                                                               "thinking_tokens": tokens,
                                                               "accuracy_by_thinking_quartile": quartiles}

    predictions = sorted((r["task"], r["language"], r["prediction"], r["correct"])
                         for r in run.read_rows("predictions", "bianbench", "thinker"))
    assert predictions == sorted(
        [("qa", "en", "FAIL", 1.0)] * 3 + [("qa", "zh", "ERROR", 0.0)] * 3
        + [("data_to_text", "en", "ERROR", 0.0)] * 3 + [("translation", "zh", "PASS", 1.0)] * 3)
    assert outcomes["bianbench"].metrics["thinking"] == {"traces": 12, "unfinished": 3, "unfinished_thinking_rate": 0.25,
                                                         "thinking_tokens": None, "accuracy_by_thinking_quartile": None}
    manifest = run.read_json("manifest.json")
    assert manifest["cells"]["bianbench/thinker"]["thinking"]["unfinished"] == 3
    # the replies' reasoning_tokens, 40 for RAG-RewardBench's and none for Bi'anBench's
    assert [e["thinking_tokens"] for e in manifest["engines"] if e["model"] == "thinker"] == [40]
    assert ("rag_rewardbench/thinker: 4 of 12 thinking traces did not end within their token limit (max_new_tokens, "
            "or the benchmark's options.max_tokens where it sets one): no verdict is read from them") in lines
