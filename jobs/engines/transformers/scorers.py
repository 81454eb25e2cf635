"""The engine for models vLLM cannot load: our own class over the transformers engine.

vLLM models go through jobs.engines.vllm.server; RequestScorer answers the same requests with the same columns, so
the rest of the pipeline does not know which engine ran.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from actors.built_in_models import revision_for
from actors.engine_calls import call_engine
from actors.engine_ledger import report, this_node
from actors.hardware import loaded_dtype, numerics, resolve_dtype
from actors.sampling import REQUEST_INPUTS, text_sampling
from actors.worker_model import WorkerModel
from benchmarks.boundary_types import ColumnBatch
from benchmarks.row_types import PromptAnswer
from jobs.engines.transformers.model import TransformersEngine
from jobs.engines.transformers.padded_batch import PaddedBatchEngine


def _conversation(messages: Any) -> list[dict[str, str]]:
    """Arrow hands nested lists over as numpy arrays of dicts; engines want plain lists."""
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]


class RequestScorer:
    """`map_batches` class: adds the model's answer columns to a batch of request rows.

    The model is the record its engine hands workers (actors.worker_model), `path` and `reference` local folders.
    discriminative -> the columns of its score head (jobs.engines.transformers.heads: `score`, or GPM's
    preference vectors);
    generative -> text and candidate_logprobs; implicit -> logp_sum / logp_mean under the policy, and
    ref_logp_* under the reference model if there is one.
    """

    def __init__(self, model: WorkerModel, padded_batch: int | None = None):
        """`padded_batch`: forward that many sequences at a time, padded (jobs.engines.transformers.padded_batch:
        the reference path of `ragjudge validate`); None, one at a time, unpadded, as the sweep scores."""
        self.model, self.kind, self.padded_batch = model, model.kind, padded_batch
        task = "classify" if self.kind == "discriminative" else "generate"
        self.engine = self._engine(model.path, task)
        self.reference = self._engine(model.reference, "generate") if model.reference else None

    def _engine(self, path: str, task: str) -> TransformersEngine:
        own = path == self.model.path  # the head and tokenizer settings are the model's, not its reference's
        settings = {"task": task, "dtype": self.model.dtype, "max_model_len": int(self.model.max_model_len),
                    "chat_template": self.model.chat_template, "revision": revision_for(self.model, path),
                    "head": self.model.head if own else None,
                    "trust_remote_code": bool(self.model.trust_remote_code),
                    "tokenizer": self.model.tokenizer if own else None}
        if self.padded_batch:
            return PaddedBatchEngine(path, batch_size=self.padded_batch, **settings)
        return TransformersEngine(path, **settings)

    def __call__(self, batch: dict[str, np.ndarray]) -> ColumnBatch:
        conversations = [_conversation(m) for m in batch["messages"]]
        if self.kind == "discriminative":
            answers = self.engine.classify(conversations)
        elif self.kind == "implicit":
            answers = self.engine.response_logprobs(conversations)
            if self.reference is not None:
                for answer, ref in zip(answers, self.reference.response_logprobs(conversations)):
                    answer["ref_logp_sum"], answer["ref_logp_mean"] = ref["logp_sum"], ref["logp_mean"]
                    answer["error"] = answer["error"] or (ref["error"] and f"reference: {ref['error']}")
                    answer["truncated"] = answer["truncated"] or ref["truncated"]
        else:
            answers = self._judge(batch, conversations)
        out = {key: values for key, values in batch.items() if key not in REQUEST_INPUTS}
        for key in sorted({key for answer in answers for key in answer}):
            out[key] = [answer.get(key) for answer in answers]
        return out

    def _judge(self, batch: dict[str, np.ndarray], conversations: list[list[dict[str, str]]]) -> list[PromptAnswer]:
        rows = [{key: values[i] for key, values in batch.items()} for i in range(len(conversations))]
        so_far = [str(row.get("continue_text") or "") for row in rows]
        answers = self.engine.generate(conversations, [text_sampling(row, self.model) for row in rows],
                                       self.model.trace_end, so_far)
        if "prefill" not in batch:
            return answers
        # One call per (prefill, candidates): a padded-batch engine then batches the verdicts it reads.
        groups: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        for i, (prefill, candidates) in enumerate(zip(batch["prefill"], batch["candidates"])):
            groups.setdefault((str(prefill), tuple(str(c) for c in candidates)), []).append(i)
        for (prefill, candidates), rows in groups.items():
            verdicts = self.engine.verdict_logprobs([conversations[i] for i in rows], prefill, list(candidates),
                                                    [so_far[i] for i in rows])
            for i, verdict in zip(rows, verdicts):
                self._add_verdict(answers[i], verdict)
        return answers

    @staticmethod
    def _add_verdict(answer: PromptAnswer, verdict: PromptAnswer) -> None:
        """A request's verdict row into its text row: the candidates' log-probs, either part's error or truncation."""
        answer["candidate_logprobs"] = verdict["candidate_logprobs"]
        answer["error"] = answer["error"] or verdict["error"]
        answer["truncated"] = answer["truncated"] or verdict["truncated"]
        answer["n_tokens"] = max(answer["n_tokens"], verdict["n_tokens"])


class ScorerServer:
    """A RequestScorer kept for the whole sweep (jobs.engines.host): cells send it their batches, so the model
    loads once per sweep, not once per cell and round; `key` names it in the sweep's ledger."""

    def __init__(self, model: WorkerModel, key: str, ledger: str | None = None):
        start = time.time()
        self.scorer, self.key, self.ledger, self.model_name = RequestScorer(model), key, ledger, model.name
        engine = self.scorer.engine
        dtype = (loaded_dtype(engine.model) if engine.model is not None
                 else resolve_dtype(model.dtype, engine.device))
        report(ledger, "started", key, self.model_name, "transformers", time.time() - start, this_node(), start,
               numerics(engine.device, dtype))

    def answer(self, batch: dict[str, np.ndarray]) -> ColumnBatch:
        start = time.time()
        out = self.scorer(batch)
        counts = {"busy_s": time.time() - start, "requests": len(batch["messages"]),
                  "prompt_tokens": sum(int(n or 0) for n in out.get("n_tokens", [])),
                  "thinking_tokens": sum(int(n or 0) for n in out.get("thinking_tokens", []))}
        report(self.ledger, "add", self.key, self.model_name, "transformers", counts)
        return out

    def shutdown(self) -> None:
        """Nothing to stop before the actor is killed: the model lives in this process only."""


def ask(batch: dict[str, np.ndarray], server: str) -> ColumnBatch:
    """`map_batches` function: a batch of request rows -> its answer columns, from the named ScorerServer."""
    return call_engine(server, "answer", batch)
