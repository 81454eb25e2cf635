"""One vLLM engine for a whole sweep: an async actor that loads a model once and answers every cell's batches.

ray.data.llm's processors start their engine actors with a dataset and stop them with it; a sweep runs one
dataset per cell and per round, so a 135M model paid ~70 s of start per cell and a 70B judge would pay
minutes per benchmark. This actor outlives the datasets: cells' Ray Data tasks send it batches of prepared
rows (actors.vllm_stage.prepare: our token ids with per-row sampling or pooling parameters), and since it is
async, the batches of every cell are in the engine at once and continuous batching mixes them.
Rows come back in the shape vllm_stage.read_answer reads, so both paths share the reading.

An implicit RM's two responses share their prompt. vLLM computes prompt log-probs only for tokens it does not
read from its prefix cache, so by default it reads none for such a request; we let it read the cache, send
a prompt's first request before the others (requests in one engine step share nothing) and keep only
answers whose cached tokens stop before the response: the positions up to the last cached token come back
with values that are not log-probs (seen on vLLM 0.32's CPU engine), so such a request is asked again
without the cache.
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
        self.reads_cache = task == "logprobs" and bool(engine_kwargs.get("enable_prefix_caching"))
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
            groups = await asyncio.gather(*(self._leader_first(rows, group) for group in self._by_prompt(rows)))
        finally:
            self.in_flight -= 1
            if not self.in_flight:
                self.busy_s += time.time() - self.busy_since
        outputs: list[Any] = [None] * len(rows)
        for group, answers in groups:
            for i, out in zip(group, answers):
                outputs[i] = out
        busy, self.busy_s = self.busy_s, 0.0
        counts = {"busy_s": busy, "requests": len(rows),
                  "prompt_tokens": sum(len(out.prompt_token_ids or []) for out in outputs),
                  "cached_prompt_tokens": sum(out.num_cached_tokens or 0 for out in outputs),
                  "generated_tokens": sum(len(out.outputs[0].token_ids) for out in outputs
                                          if self.task != "classify")}
        report(self.ledger, "add", self.key, self.model_name, "vllm", counts)
        return [{**row, **self._columns(out)} for row, out in zip(rows, outputs)]

    def _by_prompt(self, rows: list[dict[str, Any]]) -> list[list[int]]:
        """Row indices, those of one prompt (the tokens before the response) together; one each unless the
        engine reads its prefix cache for prompt log-probs."""
        if not self.reads_cache:
            return [[i] for i in range(len(rows))]
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, row in enumerate(rows):
            groups.setdefault(tuple(row["tokenized_prompt"][:int(row["response_start"])]), []).append(i)
        return list(groups.values())

    async def _leader_first(self, rows: list[dict[str, Any]], group: list[int]) -> tuple[list[int], list]:
        """The group's first request, then the rest at once: they find its prompt in the prefix cache."""
        first = await self._one(rows[group[0]])
        rest = await asyncio.gather(*(self._one(rows[i]) for i in group[1:]))
        return group, [first, *rest]

    async def _one(self, row: dict[str, Any]):
        final = await self._ask(row, read_cache=self.reads_cache)
        if self.reads_cache and (final.num_cached_tokens or 0) >= int(row["response_start"]):
            final = await self._ask(row, read_cache=False)  # the cache reached into the response: see above
        return final

    async def _ask(self, row: dict[str, Any], read_cache: bool):
        import vllm
        from vllm.inputs import TokensPrompt

        prompt = TokensPrompt(prompt_token_ids=[int(t) for t in row["tokenized_prompt"]])
        request_id = f"{self.key}-{next(self.ids)}"
        if self.task == "classify":
            stream = self.engine.encode(prompt, vllm.PoolingParams(task="classify", **row["pooling_params"]),
                                        request_id)
        else:
            params = dict(row["sampling_params"])
            if self.task == "logprobs":
                params["skip_reading_prefix_cache"] = not read_cache
            stream = self.engine.generate(prompt, vllm.SamplingParams(**params), request_id)
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
