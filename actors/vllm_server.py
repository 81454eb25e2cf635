"""One vLLM engine for a whole sweep: an async actor that loads a model once and answers every cell's batches.

ray.data.llm's processors start their engine actors with a dataset and stop them with it; a sweep runs one
dataset per cell and per round, so a 135M model paid ~70 s of start per cell and a 70B judge would pay
minutes per benchmark. This actor outlives the datasets: cells' Ray Data tasks send it batches of prepared
rows (actors.vllm_stage.prepare: our token ids with per-row sampling or pooling parameters), and since it is
async, the batches of every cell are in the engine at once and continuous batching mixes them.
Rows come back in the shape vllm_stage.read_answer reads, so both paths share the reading.
"""
from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

from actors.engine_ledger import report
from actors.vllm_stage import engine_settings

RUNNERS = {"classify": {"runner": "pooling", "convert": "classify"}, "judge": {"runner": "generate"},
           "logprobs": {"runner": "generate"}}


def _logprob_dicts(steps: list | None) -> list[dict[int, dict[str, float]] | None] | None:
    """vLLM's Logprob objects -> plain dicts a Ray object can carry: {token id: {"logprob": value}}."""
    if steps is None:
        return None
    return [None if step is None else {int(t): {"logprob": float(lp.logprob)} for t, lp in step.items()}
            for step in steps]


class VllmServer:
    """The engine of one (model, weights, task); `key` names it in the sweep's ledger."""

    def __init__(self, model: dict[str, Any], path: str, task: str, key: str, ledger: str | None = None):
        import vllm

        start = time.time()
        self.task, self.key, self.ledger, self.model_name = task, key, ledger, model["name"]
        engine_kwargs, _, _ = engine_settings(model, path, task)
        self.engine = vllm.AsyncLLMEngine.from_engine_args(
            vllm.AsyncEngineArgs(model=path, **engine_kwargs, **RUNNERS[task]))
        self.ids = itertools.count()
        self.in_flight, self.busy_since, self.busy_s = 0, 0.0, 0.0
        report(ledger, "started", key, self.model_name, "vllm", time.time() - start)

    async def answer(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Engine rows for prepared rows, in order; the batch's counts go to the ledger."""
        if not self.in_flight:
            self.busy_since = time.time()
        self.in_flight += 1
        try:
            outputs = await asyncio.gather(*(self._one(row) for row in rows))
        finally:
            self.in_flight -= 1
            if not self.in_flight:
                self.busy_s += time.time() - self.busy_since
        busy, self.busy_s = self.busy_s, 0.0
        counts = {"busy_s": busy, "requests": len(rows),
                  "prompt_tokens": sum(len(out.prompt_token_ids or []) for out in outputs),
                  "cached_prompt_tokens": sum(out.num_cached_tokens or 0 for out in outputs),
                  "generated_tokens": sum(len(out.outputs[0].token_ids) for out in outputs
                                          if self.task != "classify")}
        report(self.ledger, "add", self.key, self.model_name, "vllm", counts)
        return [{**row, **self._columns(out)} for row, out in zip(rows, outputs)]

    async def _one(self, row: dict[str, Any]):
        import vllm
        from vllm.inputs import TokensPrompt

        prompt = TokensPrompt(prompt_token_ids=[int(t) for t in row["tokenized_prompt"]])
        request_id = f"{self.key}-{next(self.ids)}"
        if self.task == "classify":
            stream = self.engine.encode(prompt, vllm.PoolingParams(task="classify", **row["pooling_params"]),
                                        request_id)
        else:
            stream = self.engine.generate(prompt, vllm.SamplingParams(**row["sampling_params"]), request_id)
        final = None
        async for final in stream:
            pass
        return final

    def _columns(self, out) -> dict[str, Any]:
        if self.task == "classify":
            return {"embeddings": out.outputs.data.float().tolist()}
        return {"generated_text": out.outputs[0].text, "logprobs": _logprob_dicts(out.outputs[0].logprobs),
                "prompt_logprobs": _logprob_dicts(out.prompt_logprobs)}

    def shutdown(self) -> None:
        self.engine.shutdown()
