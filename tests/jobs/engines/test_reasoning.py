"""A thinking judge's trace split from its answer (jobs.engines.reasoning), its settings checked where the sweep
loads, and an API's trace field read (jobs.engines.http.client): hand-written texts, each against the reading
that would take the verdict from inside the trace."""
from __future__ import annotations

import re

import pytest
from openai.types.chat import ChatCompletion
from sweeps import write_sweep
from worker_models import worker

from jobs.config import ConfigError, ModelConfig
from jobs.config.reasoning import ReasoningSettings
from jobs.config.schema import flat_settings
from jobs.engines.base import worker_model
from jobs.engines.http.client import chat_request, completion_thinking
from jobs.engines.reasoning import split_answer, split_trace
from jobs.loading import load_sweep

THINK = ReasoningSettings().pair()
HARMONY = "unknown delimiters 'harmony'; known: think, or set start and end"


def test_the_answer_is_the_text_after_the_first_end_delimiter():
    assert THINK == ("<think>", "</think>")
    assert split_trace("<think>So: Choose 2.</think>\n\nChoose 1", *THINK) == ("Choose 1", "So: Choose 2.", True)
    # a trace the template opened in the prompt has no start tag; a later end tag belongs to the answer
    assert split_trace("Choose 2?\n</think>Choose 1</think>x", *THINK) == ("Choose 1</think>x", "Choose 2?", True)
    assert split_trace("<think></think>Choose 2", *THINK) == ("Choose 2", "", True)


def test_a_trace_that_does_not_end_has_no_answer_whatever_it_says():
    assert split_trace("<think>Choose 2, clearly. But", *THINK) == (None, "Choose 2, clearly. But", False)
    assert split_trace("Choose 2", *THINK) == (None, "Choose 2", False)  # opened in the prompt, never closed


def test_a_models_own_delimiters_replace_the_named_pair():
    own = ReasoningSettings(start="[[plan]]", end="[[/plan]]")
    assert split_trace("[[plan]]<think>x</think>[[/plan]] PASS", *own.pair()) == ("PASS", "<think>x</think>", True)


def test_split_answer_drops_prefill_logprobs_and_keeps_failed_and_api_split_answers():
    settings = ReasoningSettings()
    split = split_answer({"text": "<think>Choose 1</think>Choose 2", "candidate_logprobs": [-0.1, -3.0]}, settings)
    assert split == {"text": "Choose 2", "thinking": "Choose 1", "thinking_finished": True, "candidate_logprobs": None,
                     "thinking_tokens": None}
    failed = {"text": None, "error": "api: HTTP 500"}
    assert split_answer(failed, settings) == {**failed, "thinking": None, "thinking_finished": None,
                                              "thinking_tokens": None}
    api = {"text": "</think>Choose 1", "thinking": "Choose 2", "thinking_finished": True, "thinking_tokens": 12}
    assert split_answer(api, settings) == api  # the server split it: its content is the answer as it is


@pytest.mark.parametrize("settings, end", [
    (ReasoningSettings(), "</think>"),
    (ReasoningSettings(start="[[plan]]", end="[[/plan]]"), "[[/plan]]"),
    (None, None),
])
def test_a_workers_trace_end_is_the_delimiter_the_settings_name(settings, end):
    """Workers cannot look a delimiters name up (jobs.config is the driver's): the driver writes the pair."""
    model = ModelConfig(name="m", path="p", kind="generative", engine="stand_in", reasoning=settings)
    assert worker_model(model).trace_end == end


@pytest.mark.parametrize("settings, problem", [
    (ReasoningSettings(start="<s>"), ("end", "start and end are set together (or neither)")),
    (ReasoningSettings(end="</s>"), ("start", "start and end are set together (or neither)")),
    (ReasoningSettings(delimiters="harmony"), ("delimiters", HARMONY)),
    (ReasoningSettings(api_field="thoughts"), ("api_field", "'thoughts' is none of reasoning_content, reasoning")),
])
def test_each_setting_the_types_cannot_check_is_named(settings, problem):
    assert settings.problems() == [problem]
    assert ReasoningSettings(start="<s>", end="</s>", delimiters="unknown").problems() == []


def _model_line(extra: str) -> str:
    return f"{{name: judge, path: some/judge, kind: generative{extra}}}"


def test_reasoning_true_is_the_default_block_and_a_model_without_one_keeps_its_flat_settings(tmp_path):
    thinking = load_sweep(write_sweep(tmp_path, "a", [_model_line(", reasoning: true")])).models["judge"]
    plain = load_sweep(write_sweep(tmp_path, "b", [_model_line(", reasoning: false")])).models["judge"]
    assert thinking.reasoning == ReasoningSettings() and plain.reasoning is None
    assert "reasoning" not in flat_settings(plain)  # hashed as before the block existed
    assert flat_settings(thinking)["reasoning"]["delimiters"] == "think"
    # on the command line too, as any other key
    sweep = write_sweep(tmp_path, "e", [_model_line("")])
    assert load_sweep(sweep, ["models.judge.reasoning=true"]).models["judge"].reasoning == ReasoningSettings()
    assert load_sweep(sweep, ["models.judge.reasoning.end=</r>", "models.judge.reasoning.start=<r>"]
                      ).models["judge"].reasoning.pair() == ("<r>", "</r>")


@pytest.mark.parametrize("extra, message", [
    (", engine: stand_in, reasoning: true, verdict: logprob", None),  # read after the trace, in a round of its own
    (", kind: api, engine: http, api: {base_env: B}, reasoning: true, verdict: logprob",
     ("models.judge.verdict': a thinking judge's log-prob verdict is read after its trace, in a request that "
      "continues the turn, which engine http cannot do (engine stand_in or transformers or vllm can)")),
    (", reasoning: {start: '<s>'}", "models.judge.reasoning.end': start and end are set together"),
])
def test_a_reasoning_block_that_cannot_work_fails_where_the_sweep_loads(tmp_path, extra, message):
    sweep = write_sweep(tmp_path, "c", [_model_line(extra).replace("kind: generative, kind: api", "kind: api")])
    if message is None:
        assert load_sweep(sweep).models["judge"].verdict == "logprob"
        return
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_sweep(sweep)


def test_a_scorer_has_no_reasoning_block(tmp_path):
    line = "{name: rm, path: some/rm, kind: discriminative, reasoning: true}"
    with pytest.raises(ConfigError, match="kind discriminative generates no text to think in"):
        load_sweep(write_sweep(tmp_path, "d", [line]))


def _completion(message: dict, finish_reason: str = "stop") -> ChatCompletion:
    return ChatCompletion.model_validate({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant", **message}}]})


def test_an_apis_trace_field_is_the_trace_and_a_reply_cut_inside_it_is_unfinished():
    done = _completion({"content": "Choose 1", "reasoning_content": "Choose 2?"})
    assert completion_thinking(done, "reasoning_content") == {"thinking": "Choose 2?", "thinking_finished": True}
    cut = _completion({"content": "", "reasoning_content": "Choose 2 because"}, "length")
    assert completion_thinking(cut, "reasoning_content") == {"thinking": "Choose 2 because",
                                                             "thinking_finished": False, "text": None}
    # an answer cut after its trace ended is finished: its text is read as any cut text is
    late = _completion({"content": "Cho", "reasoning_content": "x"}, "length")
    assert completion_thinking(late, "reasoning_content")["thinking_finished"] is True
    assert completion_thinking(done, "reasoning") == {}  # the server sent no such field


def test_enable_thinking_is_sent_to_the_servers_chat_template_only_where_set():
    row = {"messages": [{"role": "user", "content": "q"}]}
    _, body = chat_request(row, worker(reasoning={"enable_thinking": False}))
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    _, body = chat_request(row, worker(reasoning={}))
    assert "chat_template_kwargs" not in body
