"""The Ray Data stage for models vLLM cannot load: our own actor class over the transformers engine.

vLLM models go through ray.data.llm (actors.vllm_stage); this class answers the same requests with the
same columns, so the rest of the pipeline does not know which engine ran.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from actors.engines import make_engine

def _engine(model: dict[str, Any], path: str, task: str):
    return make_engine("transformers", path, task, dtype=model["dtype"], max_model_len=model["max_model_len"],
                       chat_template=model.get("chat_template"))


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
