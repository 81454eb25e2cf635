"""Inference engines behind one small interface: vLLM for throughput, transformers for what vLLM cannot load.

Both engines template every conversation themselves (tokenizer.apply_chat_template to text, then one
tokenisation without added special tokens) and hand the model token ids. That makes the prompt the same
token for token in both engines, and lets a row that does not fit be reported instead of silently cut:
a row whose tokens exceed `max_model_len` comes back with truncated=True and error="context overflow: ...",
and the rest of the batch is scored normally.

Every method takes a list of conversations (lists of {"role", "content"} dicts) and returns one dict per
conversation, in order, always with "n_tokens" (templated input tokens), "truncated" and "error".
"""
from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any, Protocol

Conversation = list[dict[str, str]]


class Engine(Protocol):
    """What the scorer actors need from a model; see the module docstring for the row contract."""

    max_model_len: int

    def classify(self, conversations: Sequence[Conversation]) -> list[dict[str, Any]]: ...

    def generate(self, conversations: Sequence[Conversation], *, max_tokens: int, temperature: float = 0.0,
                 top_p: float = 1.0, seed: int | None = None) -> list[dict[str, Any]]: ...

    def next_token_logprobs(self, conversations: Sequence[Conversation], *, prefill: str,
                            candidates: list[str]) -> list[dict[str, Any]]: ...

    def response_logprobs(self, conversations: Sequence[Conversation]) -> list[dict[str, Any]]: ...


class _TemplatedEngine:
    """The engine-independent half: templating, overflow checks, masking, row assembly.

    Subclasses implement four primitives on token ids: `_scores`, `_generate`, `_next_logprobs` and
    `_token_logprobs`; everything a benchmark relies on (which tokens are the response, what counts as
    overflow) is decided here once, so the two engines cannot drift apart.
    """

    task: str
    max_model_len: int

    def _load_tokenizer(self, path: str, chat_template: str | None) -> None:
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(path)
        if chat_template is not None:  # the template itself, or a file holding it (as vLLM accepts)
            is_file = "\n" not in chat_template and "{" not in chat_template and os.path.isfile(chat_template)
            self.tokenizer.chat_template = open(chat_template).read() if is_file else chat_template
        if not self.tokenizer.chat_template:
            raise ValueError(f"{path}: the tokenizer has no chat template; pass chat_template=")

    def _ids(self, conversation: Conversation, *, open_turn: bool, suffix: str = "") -> list[int]:
        text = self.tokenizer.apply_chat_template(
            list(conversation), tokenize=False, add_generation_prompt=open_turn)
        return list(self.tokenizer(text + suffix, add_special_tokens=False)["input_ids"])

    def _fits(self, n_tokens: int, new_tokens: int) -> str | None:
        """None if the row fits, else the error. Generation needs room for at least one new token."""
        if n_tokens > self.max_model_len:
            return f"context overflow: {n_tokens} tokens > max_model_len {self.max_model_len}"
        if new_tokens and n_tokens + 1 > self.max_model_len:
            return (f"context overflow: {n_tokens} tokens leave no room for a generated token "
                    f"(max_model_len {self.max_model_len})")
        return None

    def _prepare(self, conversations: Sequence[Conversation], new_tokens: int, empty: dict[str, Any],
                 **template: Any) -> tuple[list[dict[str, Any]], list[int], list[list[int]]]:
        """Template every row; returns all result rows, and the indices and ids of the rows to run."""
        rows, todo, ids = [], [], []
        for i, conversation in enumerate(conversations):
            row = {**empty, "n_tokens": 0, "truncated": False, "error": None}
            try:
                tokens = self._ids(conversation, **template)
            except Exception as exc:  # a malformed conversation spoils its own row only
                row["error"] = f"template: {type(exc).__name__}: {exc}"
                rows.append(row)
                continue
            row["n_tokens"] = len(tokens)
            if (problem := self._fits(len(tokens), new_tokens)) is not None:
                row.update(error=problem, truncated=True)
            else:
                todo.append(i)
                ids.append(tokens)
            rows.append(row)
        return rows, todo, ids

    def _need(self, task: str, method: str) -> None:
        if self.task != task:
            raise ValueError(f"{method}() needs an engine built with task={task!r}, not {self.task!r}")

    # ---- public interface -------------------------------------------------------------------------------

    def classify(self, conversations: Sequence[Conversation]) -> list[dict[str, Any]]:
        """Raw logit of a 1-label sequence classifier (no sigmoid) on the closed conversation."""
        self._need("classify", "classify")
        rows, todo, ids = self._prepare(conversations, 0, {"score": None}, open_turn=False)
        for i, score in zip(todo, self._scores(ids) if ids else []):
            rows[i]["score"] = float(score)
        return rows

    def generate(self, conversations: Sequence[Conversation], *, max_tokens: int, temperature: float = 0.0,
                 top_p: float = 1.0, seed: int | None = None) -> list[dict[str, Any]]:
        """The assistant's reply, special tokens stripped; max_tokens is capped by the room left."""
        self._need("generate", "generate")
        rows, todo, ids = self._prepare(conversations, 1, {"text": None}, open_turn=True)
        budgets = [min(max_tokens, self.max_model_len - len(t)) for t in ids]
        texts = self._generate(ids, budgets, temperature=temperature, top_p=top_p, seed=seed) if ids else []
        for i, text in zip(todo, texts):
            rows[i]["text"] = text
        return rows

    def next_token_logprobs(self, conversations: Sequence[Conversation], *, prefill: str,
                            candidates: list[str]) -> list[dict[str, Any]]:
        """Log-prob of each candidate as the next token after the opened assistant turn plus `prefill`.

        A candidate must be one token on its own (e.g. "1" after "Choose "); one that the tokenizer splits
        into several tokens gets None, since its first token alone would not be its probability.
        """
        self._need("generate", "next_token_logprobs")
        token_of: dict[str, int | None] = {}
        for candidate in candidates:
            pieces = self.tokenizer(candidate, add_special_tokens=False)["input_ids"]
            token_of[candidate] = pieces[0] if len(pieces) == 1 else None
        wanted = sorted({t for t in token_of.values() if t is not None})
        empty = {"logprobs": {c: None for c in candidates}}
        rows, todo, ids = self._prepare(conversations, 1, empty, open_turn=True, suffix=prefill)
        for i, found in zip(todo, self._next_logprobs(ids, wanted) if ids and wanted else []):
            rows[i]["logprobs"] = {c: (None if t is None else found.get(t)) for c, t in token_of.items()}
        return rows

    def response_logprobs(self, conversations: Sequence[Conversation]) -> list[dict[str, Any]]:
        """Sum and mean of log p(response token | everything before it), prompt tokens masked.

        The last message is the assistant response. Response tokens are the tokens of the closed template
        after the tokens of the prompt templated with the assistant turn opened (add_generation_prompt=True);
        where the two tokenise differently at the seam, the longest common token prefix is the prompt. The
        response therefore INCLUDES the template's closing tokens (for ChatML "<|im_end|>" and "\\n"): they
        are part of what the model must produce to end its turn, and both sides of a pair get them equally.
        """
        self._need("generate", "response_logprobs")
        # new_tokens=1: vLLM's generate runner rejects a prompt that fills the context even when only scoring.
        empty = {"logp_sum": None, "logp_mean": None, "n_response_tokens": None}
        rows, todo, ids = self._prepare(conversations, 1, empty, open_turn=False)
        runs = []  # (row index, first response token, token ids)
        for i, tokens in zip(todo, ids):
            conversation = conversations[i]
            if conversation[-1]["role"] != "assistant":
                rows[i]["error"] = f"last message must be the assistant's, not {conversation[-1]['role']!r}"
                continue
            prompt = self._ids(conversation[:-1], open_turn=True)
            common = next((k for k, (a, b) in enumerate(zip(prompt, tokens)) if a != b),
                          min(len(prompt), len(tokens)))
            runs.append((i, max(common, 1), tokens))  # the first token has no conditional log-prob
        logps_per_row = self._token_logprobs([tokens for _, _, tokens in runs]) if runs else []
        for (i, start, _), logps in zip(runs, logps_per_row):
            response = logps[start - 1:]  # logps[j] is the log-prob of token j + 1
            if not response:
                rows[i]["error"] = "empty response: no tokens after the prompt"
                continue
            total = float(sum(response))
            rows[i].update(logp_sum=total, logp_mean=total / len(response), n_response_tokens=len(response))
        return rows

    # ---- engine primitives ------------------------------------------------------------------------------

    def _scores(self, ids: list[list[int]]) -> list[float]:
        raise NotImplementedError

    def _generate(self, ids: list[list[int]], budgets: list[int], *, temperature: float, top_p: float,
                  seed: int | None) -> list[str]:
        raise NotImplementedError

    def _next_logprobs(self, ids: list[list[int]], token_ids: list[int]) -> list[dict[int, float]]:
        raise NotImplementedError

    def _token_logprobs(self, ids: list[list[int]]) -> list[list[float]]:
        """Per row, the log-prob of every token after the first, given the tokens before it."""
        raise NotImplementedError


class VLLMEngine(_TemplatedEngine):
    """vllm.LLM fed with token ids (TokensPrompt), so templating stays ours.

    - classify: the pooling runner with PoolingParams(use_activation=False): vLLM applies a sigmoid to a
      1-label classifier by default, a reward model's score is the raw logit.
    - next-token log-probs: SamplingParams(logprob_token_ids=...) returns the exact log-prob of each
      candidate token (not only those in a top-k), from the raw, unprocessed distribution.
    - response log-probs: SamplingParams(prompt_logprobs=0) returns the log-prob of each prompt token.
    kv_cache_gib sizes the KV cache: VLLM_CPU_KVCACHE_SPACE on CPU, kv_cache_memory_bytes on GPU.
    enforce_eager=True skips torch.compile: on CPU that saves 40-80 s per start (vLLM 0.32 recompiles every
    time, its compile cache fails to load there) but runs about 3x slower, so only short jobs (tests) want it.
    """

    def __init__(self, path: str, *, task: str, dtype: str = "float32", max_model_len: int = 2048,
                 tensor_parallel_size: int = 1, kv_cache_gib: float | None = 1, seed: int = 0,
                 chat_template: str | None = None, enforce_eager: bool = False):
        if task not in ("generate", "classify"):
            raise ValueError(f"task must be 'generate' or 'classify', not {task!r}")
        from vllm import LLM
        from vllm.platforms import current_platform

        self.task = task
        self._load_tokenizer(path, chat_template)
        kwargs: dict[str, Any] = {}
        if kv_cache_gib is not None:
            if current_platform.is_cpu():
                # Read by the engine-core process at start-up; the default (a share of RAM) is far too big
                # for several engines on one laptop.
                os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(max(1, math.ceil(kv_cache_gib)))
            else:
                kwargs["kv_cache_memory_bytes"] = int(kv_cache_gib * 2**30)
        self.llm = LLM(model=path, runner="pooling" if task == "classify" else "generate", dtype=dtype,
                       max_model_len=max_model_len, tensor_parallel_size=tensor_parallel_size, seed=seed,
                       enforce_eager=enforce_eager, **kwargs)
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)

    def close(self) -> None:
        """Stop the engine-core processes now, rather than in an atexit hook that logs to closed streams."""
        self.llm.llm_engine.engine_core.shutdown()

    @staticmethod
    def _prompts(ids: list[list[int]]) -> list[Any]:
        from vllm.inputs import TokensPrompt

        return [TokensPrompt(prompt_token_ids=tokens) for tokens in ids]

    def _scores(self, ids: list[list[int]]) -> list[float]:
        from vllm import PoolingParams

        outputs = self.llm.classify(self._prompts(ids), pooling_params=PoolingParams(use_activation=False),
                                    use_tqdm=False)
        scores = []
        for out in outputs:
            values = out.outputs.probs  # named "probs", but raw logits with use_activation=False
            if len(values) != 1:
                raise ValueError(f"a reward model has one label; this classifier returned {len(values)}")
            scores.append(float(values[0]))
        return scores

    def _generate(self, ids: list[list[int]], budgets: list[int], *, temperature: float, top_p: float,
                  seed: int | None) -> list[str]:
        from vllm import SamplingParams

        params = [SamplingParams(max_tokens=b, temperature=temperature, top_p=top_p, seed=seed)
                  for b in budgets]
        outputs = self.llm.generate(self._prompts(ids), params, use_tqdm=False)
        return [out.outputs[0].text for out in outputs]

    def _next_logprobs(self, ids: list[list[int]], token_ids: list[int]) -> list[dict[int, float]]:
        from vllm import SamplingParams

        params = SamplingParams(max_tokens=1, temperature=0.0, logprob_token_ids=token_ids)
        outputs = self.llm.generate(self._prompts(ids), params, use_tqdm=False)
        return [{t: float(lp.logprob) for t, lp in out.outputs[0].logprobs[0].items() if t in token_ids}
                for out in outputs]

    def _token_logprobs(self, ids: list[list[int]]) -> list[list[float]]:
        from vllm import SamplingParams

        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        outputs = self.llm.generate(self._prompts(ids), params, use_tqdm=False)
        # prompt_logprobs[0] is None (no context); entry j holds token j's own log-prob among its top-k.
        return [[float(step[token].logprob) for token, step in zip(tokens[1:], out.prompt_logprobs[1:])]
                for tokens, out in zip(ids, outputs)]


class HFEngine(_TemplatedEngine):
    """transformers, one row at a time: for heads vLLM cannot load, and as the reference in tests.

    The classifier pools the way the model's own transformers class does (last non-padding token).
    """

    def __init__(self, path: str, *, task: str, dtype: str = "float32", max_model_len: int = 2048,
                 chat_template: str | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

        if task not in ("generate", "classify"):
            raise ValueError(f"task must be 'generate' or 'classify', not {task!r}")
        self.task = task
        self.max_model_len = max_model_len
        self._load_tokenizer(path, chat_template)
        cls = AutoModelForSequenceClassification if task == "classify" else AutoModelForCausalLM
        torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
        self.model = cls.from_pretrained(path, dtype=torch_dtype).eval()
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model.to(self.device)

    def _logits(self, tokens: list[int]) -> Any:
        import torch

        with torch.no_grad():
            return self.model(torch.tensor([tokens], device=self.device)).logits[0].float()

    def _scores(self, ids: list[list[int]]) -> list[float]:
        scores = []
        for tokens in ids:
            logits = self._logits(tokens)
            if logits.numel() != 1:
                raise ValueError(f"a reward model has one label; this classifier returned {logits.numel()}")
            scores.append(float(logits.item()))
        return scores

    def _generate(self, ids: list[list[int]], budgets: list[int], *, temperature: float, top_p: float,
                  seed: int | None) -> list[str]:
        import torch

        texts = []
        for tokens, budget in zip(ids, budgets):
            if seed is not None:
                torch.manual_seed(seed)
            sample = temperature > 0
            input_ids = torch.tensor([tokens], device=self.device)
            pad = self.tokenizer.pad_token_id
            with torch.no_grad():
                out = self.model.generate(
                    input_ids, attention_mask=torch.ones_like(input_ids), max_new_tokens=budget,
                    do_sample=sample, temperature=temperature if sample else None,
                    top_p=top_p if sample else None, top_k=None,
                    pad_token_id=pad if pad is not None else self.tokenizer.eos_token_id)
            texts.append(self.tokenizer.decode(out[0, len(tokens):], skip_special_tokens=True))
        return texts

    def _next_logprobs(self, ids: list[list[int]], token_ids: list[int]) -> list[dict[int, float]]:
        found = []
        for tokens in ids:
            logp = self._logits(tokens)[-1].log_softmax(-1)
            found.append({t: float(logp[t]) for t in token_ids})
        return found

    def _token_logprobs(self, ids: list[list[int]]) -> list[list[float]]:
        import torch

        out = []
        for tokens in ids:
            logits = self._logits(tokens)[:-1]
            target = torch.tensor(tokens[1:], device=logits.device).unsqueeze(1)
            out.append((logits.gather(1, target).squeeze(1) - logits.logsumexp(-1)).tolist())
        return out


def make_engine(engine: str, path: str, task: str, **kwargs: Any) -> Engine:
    """An engine by name: "vllm" (VLLMEngine) or "transformers" (HFEngine)."""
    if engine == "vllm":
        return VLLMEngine(path, task=task, **kwargs)
    if engine == "transformers":
        return HFEngine(path, task=task, **kwargs)
    raise ValueError(f"unknown engine {engine!r}; expected 'vllm' or 'transformers'")
