"""transformers, one conversation at a time: for reward heads vLLM cannot load, and the reference in tests.

Prompts come from actors.templating, exactly as the vLLM stage builds them, so the two engines see the same
tokens. Every method returns one row per conversation with `n_tokens`, `truncated` and `error`; a row that
does not fit or cannot be templated carries its error and the others are answered.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

from actors.hardware import resolve_dtype
from actors.sampling import Sampling
from actors.templating import Messages, overflow, templater, trace_token_count
from benchmarks.row_types import PromptAnswer, TaskColumns
from jobs.engines.transformers.devices import visible_devices
from jobs.engines.transformers.heads import make_head


class TransformersEngine:
    """A causal LM (task="generate") or a discriminative reward model (task="classify") scored by its head."""

    def __init__(self, path: str, *, task: str, dtype: str = "float32", max_model_len: int = 2048,
                 chat_template: str | None = None, revision: str | None = None, head: str | None = None,
                 trust_remote_code: bool = False, tokenizer: str | None = None):
        """`head`: how a classify engine reads its score (jobs.engines.transformers.heads; unset: a stock
        classifier's logit).
        `trust_remote_code`: the model file's setting for code its repository ships, tokenizer and model alike.
        `tokenizer`: where the tokenizer is when the weights' repository has none (at its own default revision)."""
        from transformers import AutoModelForCausalLM

        from jobs.engines.transformers.reward_nets import Load

        if task not in ("generate", "classify"):
            raise ValueError(f"task must be 'generate' or 'classify', not {task!r}")
        self.task, self.max_model_len = task, max_model_len
        self.templater = templater(tokenizer or path, chat_template, None if tokenizer else revision,
                                   trust_remote_code)
        devices = visible_devices()
        self.device = devices[0]  # the inputs' device; the layers may be split over the others too
        load = Load(dtype=resolve_dtype(dtype, self.device), revision=revision,
                    trust_remote_code=trust_remote_code, devices=devices)
        if task == "classify":
            self.head = make_head(head or "classifier", path, load, self.templater)
            self.model = getattr(self.head, "model", None)
        else:
            self.head = None
            self.model = load.placed(AutoModelForCausalLM.from_pretrained(
                path, dtype=load.torch_dtype(), revision=revision, trust_remote_code=trust_remote_code))
        self._forward_args = (frozenset(inspect.signature(self.model.forward).parameters) if self.model is not None
                              else frozenset())

    def classify(self, conversations: Sequence[Messages]) -> list[PromptAnswer]:
        """What the model's score head makes of each closed conversation: by default the raw logit of a
        sequence classifier (a reward model's score has no sigmoid); the head's own columns otherwise."""
        if self.head is None:
            raise ValueError(f"this method needs an engine built with task='classify', not {self.task!r}")
        return self._rows(conversations, "classify", self.head.prompt, self.head.answer, dict(self.head.columns))

    def generate(self, conversations: Sequence[Messages], samplings: Sequence[Sampling],
                 trace_end: str | None = None, turns_so_far: Sequence[str] | None = None) -> list[PromptAnswer]:
        """Continuation of the opened assistant turn (actors.sampling.text_sampling per conversation), special
        tokens stripped; with a thinking judge's `trace_end`, also the tokens its trace took. `turns_so_far`: per
        conversation, the text already in the turn (a request's `continue_text`; "" for none), generated after
        (Templater.continued) and written before what was generated, so the text is the whole turn's."""
        tokenizer = self.templater.tokenizer

        def prompt(request: tuple[Messages, Sampling, str]) -> tuple[list[int], tuple[Sampling, str]]:
            messages, sampling, so_far = request
            ids = self.templater.continued(messages, so_far) if so_far else self.templater.opened(messages)
            return ids, (sampling, so_far)

        def answer(ids: list[int], asked: tuple[Sampling, str]) -> TaskColumns:
            sampling, so_far = asked
            generated = self._continue(ids, sampling)
            text: TaskColumns = {"text": so_far + tokenizer.decode(generated, skip_special_tokens=True)}
            if trace_end is not None:  # an end delimiter may be a special token: decoded with them
                text["thinking_tokens"] = 0 if so_far else trace_token_count(
                    generated, lambda part: tokenizer.decode(part, skip_special_tokens=False), trace_end)
            return text

        so_far = list(turns_so_far) if turns_so_far is not None else [""] * len(conversations)
        return self._rows(list(zip(conversations, samplings, so_far, strict=True)), "generate", prompt, answer,
                          {"text": None})

    def verdict_logprobs(self, conversations: Sequence[Messages], prefill: str, candidates: list[str],
                         turns_so_far: Sequence[str] | None = None) -> list[PromptAnswer]:
        """Log-prob of each candidate's deciding token after the opened turn, the conversation's text so far in
        it (`turns_so_far`, as `generate` takes them) and `prefill` (Templater.verdict)."""
        def prompt(asked: tuple[Messages, str]):
            verdict = self.templater.verdict(asked[0], prefill, candidates, asked[1])
            return verdict.prompt_ids, verdict.candidate_ids

        def answer(ids: list[int], candidate_ids: list[int]) -> TaskColumns:
            logp = self._logits(ids, keep=1)[-1].log_softmax(-1)
            return {"candidate_logprobs": [float(logp[t]) for t in candidate_ids]}

        so_far = list(turns_so_far) if turns_so_far is not None else [""] * len(conversations)
        return self._rows(list(zip(conversations, so_far, strict=True)), "generate", prompt, answer,
                          {"candidate_logprobs": None})

    def response_logprobs(self, conversations: Sequence[Messages]) -> list[PromptAnswer]:
        """Sum and mean log-prob of the last (assistant) message's tokens, the prompt masked (Templater.response)."""
        def answer(ids: list[int], start: int) -> TaskColumns:
            import torch

            first = max(start, 1) - 1  # the logits at position p score token p + 1
            logits = self._logits(ids, keep=len(ids) - first)[:-1]
            target = torch.tensor(ids[first + 1:], device=logits.device).unsqueeze(1)
            logps = logits.gather(1, target).squeeze(1) - logits.logsumexp(-1)
            total = float(logps.sum())
            return {"logp_sum": total, "logp_mean": total / len(logps), "n_response_tokens": len(logps)}

        def prompt(messages: Messages):
            if messages[-1]["role"] != "assistant":
                raise ValueError(f"last message must be the assistant's, not {messages[-1]['role']!r}")
            return self.templater.response(messages)

        return self._rows(conversations, "generate", prompt, answer,
                          {"logp_sum": None, "logp_mean": None, "n_response_tokens": None})

    def _rows(self, conversations: Sequence[Messages], task: str, prompt: Callable, answer: Callable,
              empty: TaskColumns) -> list[PromptAnswer]:
        if self.task != task:
            raise ValueError(f"this method needs an engine built with task={task!r}, not {self.task!r}")
        rows = []
        for messages in conversations:
            row = {**empty, "n_tokens": 0, "truncated": False, "error": None}
            try:
                ids, extra = prompt(messages)
            except ValueError as exc:  # a malformed conversation spoils its own row only
                rows.append({**row, "error": f"template: {exc}"})
                continue
            row["n_tokens"] = len(ids)
            if problem := overflow(len(ids), self.max_model_len, generates=task == "generate"):
                row.update(error=problem, truncated=True)
            else:
                row.update(answer(ids, extra))
            rows.append(row)
        return rows

    def _logits(self, ids: list[int], keep: int = 0):
        """The logits of the last `keep` positions (0: all). transformers' `logits_to_keep` skips the LM head
        over the rest: for a 3,000-token judge prompt that is 3,000 x vocabulary floats never made."""
        import torch

        kwargs = {"logits_to_keep": keep} if keep and "logits_to_keep" in self._forward_args else {}
        with torch.no_grad():
            return self.model(torch.tensor([ids], device=self.device), **kwargs).logits[0, -keep:].float()

    def _continue(self, ids: list[int], sampling: Sampling) -> list[int]:
        """The token ids generated after `ids`."""
        import torch

        tokenizer = self.templater.tokenizer
        input_ids = torch.tensor([ids], device=self.device)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        if sampled := sampling["temperature"] > 0:
            torch.manual_seed(sampling["seed"])  # the request's seed: the same run samples the same text
            options = {"temperature": sampling["temperature"], "top_p": sampling["top_p"], "top_k": None}
        else:
            options = {"top_p": None, "top_k": None, "temperature": None}
        with torch.no_grad():
            if sampling.get("stop"):  # the generated text then ends with the stop string, as vLLM's does when asked
                options.update(stop_strings=list(sampling["stop"]), tokenizer=tokenizer)
            out = self.model.generate(input_ids, attention_mask=torch.ones_like(input_ids), do_sample=sampled,
                                      max_new_tokens=min(sampling["max_tokens"], self.max_model_len - len(ids)),
                                      pad_token_id=pad, **options)
        return out[0, len(ids):].tolist()
