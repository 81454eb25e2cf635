"""An implicit RM's prompt log-probs read vLLM's prefix cache through VllmServer and still equal uncached ones.

One engine (SmolLM2 on vLLM's CPU build, in this process) answers a pair sharing its prompt and a request
sent twice. The second copy finds every full block of itself cached, response included: vLLM then returns
values that are not log-probs for the cached positions, so the server must ask again without the cache.
The same engine answers a judge's rows as well (the demo's judge shares it: jobs.engines.host.engine_name).
"""
import asyncio
import dataclasses
import gc

import pytest
from reference import smollm2_verdict_logprobs
from worker_models import worker_of

from actors.built_in_models import resolve_model
from actors.templating import templater
from benchmarks import rag_rewardbench as rb
from jobs.engines.vllm.stage import engine_settings, prepare, split_judge_request
from jobs.loading import load_model

pytestmark = pytest.mark.integration

PASSAGE = "The Nile flows north through eleven countries and ends in a delta on the Mediterranean Sea. " * 12
PROMPT = [{"role": "user", "content": f"{PASSAGE}\nWhich sea does the Nile flow into?"}]
ANSWERS = ("It flows into the Mediterranean Sea, through a wide delta in the north of Egypt.",
           "It flows into the Red Sea after crossing the Sahara desert in Sudan and Egypt.")


def request(request_id: str, answer: str) -> dict:
    return {"request_id": request_id, "messages": [*PROMPT, {"role": "assistant", "content": answer}]}


@pytest.fixture(scope="module")
def implicit_server():
    from jobs.engines.vllm.server import VllmServer

    model = worker_of(load_model("smollm2_implicit", "test"))
    path = resolve_model(model.path)
    runtime_env = engine_settings(model, path, "logprobs")[1]  # what the sweep gives the engine's actor
    with pytest.MonkeyPatch.context() as patch:
        for name, value in runtime_env["env_vars"].items():
            patch.setenv(name, value)
        server = VllmServer(model, path, "logprobs", key="cache-test")
        loop = asyncio.new_event_loop()  # one for every test: the engine's output handler lives in it
        yield server, model, path, loop
        tasks = asyncio.all_tasks(loop)  # what asyncio.run does at its end: the handler lets go of its sockets
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.close()
        server.shutdown()
        del server.engine  # collected now, not at interpreter exit when vLLM's modules are half torn down
        gc.collect()


def test_cached_prompt_logprobs_equal_uncached_ones(implicit_server, monkeypatch):
    server, model, path, loop = implicit_server
    counts = []  # each batch's counts, as the sweep's ledger would get them
    monkeypatch.setattr("jobs.engines.vllm.server.report", lambda ledger, method, *args: counts.append(args[-1]))
    assert server.reads_cache
    requests = [request("chosen", ANSWERS[0]), request("rejected", ANSWERS[1]), request("again", ANSWERS[0])]
    rows = [prepare(r, model, path, "logprobs") for r in requests]

    async def ask():
        # the leader first, its follower reads the prompt
        pair = await server.answer(requests[:2], "logprobs", model, path)
        # every full block of it is cached now, response too
        again = await server.answer(requests[2:], "logprobs", model, path)
        server.reads_cache = False
        try:
            uncached = await server.answer(requests, "logprobs", model, path)
        finally:
            server.reads_cache = True
        return pair + again, uncached

    cached, uncached = loop.run_until_complete(ask())
    pair_counts, again_counts = counts[0], counts[1]
    assert 0 < pair_counts["cached_prompt_tokens"] <= rows[1]["response_start"]  # the follower read the prompt
    assert again_counts["cached_prompt_tokens"] == 0  # the answer kept is the one asked again without the cache
    for g, w in zip(cached, uncached):
        assert g["n_response_tokens"] == w["n_response_tokens"] > 10
        assert g["logp_sum"] == pytest.approx(w["logp_sum"], abs=1e-3), g["request_id"]
    assert cached[0]["logp_sum"] != pytest.approx(cached[1]["logp_sum"], abs=1e-2)  # two different responses


def _judge_request(monkeypatch) -> tuple[list, object, dict]:
    """(the ledger reports the server sends, the demo judge's worker record, its first request on the pair)."""
    reports = []
    monkeypatch.setattr("jobs.engines.vllm.server.report", lambda ledger, method, *args: reports.append(args))
    item = {"item_id": "nile", "subset": "s", "prompt": PROMPT[0]["content"], "chosen": ANSWERS[0],
            "reject": ANSWERS[1]}
    return reports, worker_of(load_model("smollm2_judge", "test")), rb.expand(item, "generative")[0]


def test_the_same_engine_answers_a_judges_rows_as_a_judge(implicit_server, monkeypatch):
    """A judge's text and verdict parts on the implicit RM's engine: the verdict's log-probs equal a direct
    transformers computation, the text is generated, and the judge's rows are counted for the judge."""
    server, _, path, loop = implicit_server
    reports, judge, request = _judge_request(monkeypatch)
    answered = loop.run_until_complete(server.answer(split_judge_request(request), "judge", judge, path, ("part",)))
    text, verdict = sorted(answered, key=lambda a: a["part"])
    assert verdict["candidate_logprobs"] == pytest.approx(smollm2_verdict_logprobs(request["messages"]), abs=2e-3)
    assert text["text"]
    [(_, model, _, counts)] = reports
    assert model == judge.name and counts["requests"] == 2 and counts["generated_tokens"] >= 2


def test_a_thinking_judges_trace_is_counted_on_the_tokens_vllm_generated(implicit_server, monkeypatch):
    """A thinking judge's text part carries `thinking_tokens`: every generated token where its end delimiter
    never came (the ledger's generated_tokens), and up to the token that completes it where it did."""
    server, _, path, loop = implicit_server
    reports, judge, request = _judge_request(monkeypatch)
    [text_part] = [p for p in split_judge_request(request) if p["part"] == "text"]

    def ask(end: str) -> dict:
        thinking = dataclasses.replace(judge, reasoning={"start": "<think>", "end": end})
        return loop.run_until_complete(server.answer([text_part], "judge", thinking, path))[0]

    never = ask("</never-written>")
    generated = reports[-1][-1]["generated_tokens"]
    assert never["thinking_tokens"] == generated > 4
    tokenizer = templater(path, judge.chat_template).tokenizer
    ids = tokenizer(never["text"], add_special_tokens=False)["input_ids"]
    end = tokenizer.decode(ids[2:4])  # what its 3rd and 4th tokens write
    first = next(n for n in range(1, len(ids) + 1) if end in tokenizer.decode(ids[:n]))
    assert ask(end)["thinking_tokens"] == first <= 4
    plain = loop.run_until_complete(server.answer([text_part], "judge", judge, path))[0]
    assert "thinking_tokens" not in plain and plain["text"] == never["text"]


def test_a_budget_cuts_the_trace_and_a_closed_trace_is_continued_under_the_requests_own_limit(implicit_server,
                                                                                             monkeypatch):
    """Under `reasoning.budget_tokens` vLLM generates up to the end delimiter, which the text keeps, or the
    budget; a request that continues the turn after a closed trace gets the text after it, under its own limit,
    and counts no trace (jobs.flow.thinking_rounds asks it)."""
    server, _, path, loop = implicit_server
    reports, judge, request = _judge_request(monkeypatch)
    [text_part] = [p for p in split_judge_request(request) if p["part"] == "text"]

    def ask(row: dict, end: str, budget: int) -> tuple[dict, int]:
        thinking = dataclasses.replace(judge, reasoning={"start": "<think>", "end": end, "budget_tokens": budget})
        answer = loop.run_until_complete(server.answer([row], "judge", thinking, path))[0]
        return answer, reports[-1][-1]["generated_tokens"]

    cut, generated = ask(text_part, "</never-written>", 3)
    assert generated == 3 == cut["thinking_tokens"]
    unbudgeted = loop.run_until_complete(server.answer([text_part], "judge", judge, path))[0]["text"]
    tokenizer = templater(path, judge.chat_template).tokenizer
    ids = tokenizer(unbudgeted, add_special_tokens=False)["input_ids"]
    end = tokenizer.decode(ids[4:6])  # what its 5th and 6th tokens write
    stopped, generated = ask(text_part, end, 32)
    assert stopped["text"].endswith(end) and end not in stopped["text"][:-len(end)] and generated <= 6
    so_far = "<think>\nThe first response cites the passage.\n</never-written>\n\n"
    closed, generated = ask({**text_part, "continue_text": so_far}, "</never-written>", 3)
    assert closed["text"].startswith(so_far) and len(closed["text"]) > len(so_far)
    assert closed["thinking_tokens"] == 0 and generated > 3  # the request's own limit, not the budget


def test_vllms_own_reasoning_parser_splits_the_whole_turn_in_the_engine(implicit_server, monkeypatch):
    """`reasoning.parser` (jobs.engines.vllm.trace_parser): the server splits each judge turn with vLLM's parser
    of that name, the turn's text so far included; granite's parser finds its trace by phrases, which any
    tokenizer writes."""
    server, _, path, loop = implicit_server
    _, judge, request = _judge_request(monkeypatch)
    [text_part] = [p for p in split_judge_request(request) if p["part"] == "text"]
    parsed = dataclasses.replace(judge, reasoning={"parser": "granite", "start": "<think>", "end": "</think>"})
    so_far = "Here is my thought process: the first response cites the passage. Here is my response:"
    answer = loop.run_until_complete(server.answer([{**text_part, "continue_text": so_far}], "judge", parsed,
                                                   path))[0]
    plain = loop.run_until_complete(server.answer([{**text_part, "continue_text": so_far}], "judge", judge, path))[0]
    assert answer["thinking"] == "the first response cites the passage." and answer["thinking_finished"] is True
    assert answer["text"] == plain["text"][len(so_far):].strip() != ""  # the generated answer after the phrase
    assert answer["thinking_tokens"] is None  # granite's parser names no end delimiter to count through
