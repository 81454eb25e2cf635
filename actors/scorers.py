"""The Ray Data stage that answers requests with a model: one class, one engine per actor.

ray.data.llm's processors cover chat generation and classification, but a reward-model sweep also needs
next-token log-probs after a prefilled assistant turn and the log-probs of a given response under the policy
and a reference model; those are not outputs of its stages, so the stage is our own class over
actors.engines (vLLM, or transformers for heads vLLM cannot load).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from actors.engines import make_engine

_ENGINE_ARGS = ("dtype", "max_model_len", "tensor_parallel_size", "kv_cache_gib", "chat_template")


def _engine(model: dict[str, Any], path: str, task: str):
    kwargs = {k: model[k] for k in _ENGINE_ARGS if k in model}
    if model["engine"] == "transformers":
        kwargs = {k: v for k, v in kwargs.items() if k in ("dtype", "max_model_len", "chat_template")}
    return make_engine(model["engine"], path, task, **kwargs)


def _conversation(messages: Any) -> list[dict[str, str]]:
    """Arrow hands nested lists over as numpy arrays of dicts; engines want plain lists."""
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]


class RequestScorer:
    """`map_batches` class: adds the model's answer columns to a batch of request rows.

    The model dict is a ModelConfig as a plain dict with `path` (and `reference`) already resolved to local
    folders. What is computed follows the model's kind:
    discriminative -> score; generative -> text, and candidate_logprobs when requests carry `candidates`;
    implicit -> logp_sum / logp_mean under the policy, and ref_logp_* under the reference model if any.
    """

    def __init__(self, model: dict[str, Any]):
        self.model = model
        self.kind = model["kind"]
        task = "classify" if self.kind == "discriminative" else "generate"
        self.engine = _engine(model, model["path"], task)
        self.reference = _engine(model, model["reference"], "generate") if model.get("reference") else None

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        conversations = [_conversation(m) for m in batch["messages"]]
        if self.kind == "discriminative":
            answers = self.engine.classify(conversations)
        elif self.kind == "implicit":
            answers = self.engine.response_logprobs(conversations)
            if self.reference is not None:
                for answer, ref in zip(answers, self.reference.response_logprobs(conversations)):
                    answer["ref_logp_sum"], answer["ref_logp_mean"] = ref.get("logp_sum"), ref.get("logp_mean")
                    answer["error"] = answer.get("error") or (ref.get("error") and f"reference: {ref['error']}")
                    answer["truncated"] = bool(answer.get("truncated") or ref.get("truncated"))
        else:
            answers = self._judge(batch, conversations)
        out = {key: values for key, values in batch.items() if key != "messages"}
        columns = sorted({key for answer in answers for key in answer})
        for key in columns:
            out[key] = [answer.get(key) for answer in answers]
        return out

    def _judge(self, batch: dict[str, np.ndarray], conversations: list[list[dict[str, str]]]) -> list[dict]:
        answers = self.engine.generate(conversations, max_tokens=int(self.model.get("max_new_tokens", 16)))
        if "candidates" not in batch:
            return answers
        keys = [(str(p), tuple(str(c) for c in cands)) for p, cands in zip(batch["prefill"], batch["candidates"])]
        for prefill, candidates in dict.fromkeys(keys):
            rows = [i for i, key in enumerate(keys) if key == (prefill, candidates)]
            scored = self.engine.next_token_logprobs(
                [conversations[i] for i in rows], prefill=prefill, candidates=list(candidates))
            for i, result in zip(rows, scored):
                logprobs = result.get("logprobs") or {}
                answers[i]["candidate_logprobs"] = [logprobs.get(c) for c in candidates]
                answers[i]["error"] = answers[i].get("error") or result.get("error")
        return answers
