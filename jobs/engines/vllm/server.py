"""One vLLM engine for a whole sweep: an async actor that loads a model once and answers every cell's batches.

ray.data.llm's processors start their engine actors with a dataset and stop them with it; a sweep runs one
dataset per cell and per round, so every cell paid an engine start, which grows with the model
(docs/measurements.md, "Figures moved from the code's comments"). This actor outlives the datasets: cells' Ray
Data tasks send it batches of request rows, which it prepares (jobs.engines.vllm.stage.prepare: our token ids
with per-row sampling or pooling parameters) in a thread beside the engine, as vLLM's own AsyncLLM tokenizes
in its front-end process; since it is async, the batches of every cell are in the engine at once and
continuous batching mixes them.
It reads the engine's outputs with vllm_stage.read_answer, as the shared judge's path does, and returns
answers, not engine rows. The task is the batch's own: model files that would build the same engine share it
(jobs.engines.host.engine_name), so one generate engine answers an implicit RM's log-prob rows and a judge's
rows side by side.

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
import os
import time
from typing import Any

from actors.built_in_models import revision_for
from actors.engine_ledger import report, this_node
from actors.hardware import numerics, rank_threads
from actors.templating import templater, trace_token_count
from actors.worker_model import WorkerModel
from benchmarks.row_types import Answer, Request
from jobs.engines.vllm.process_owner import own_engine_processes
from jobs.engines.vllm.ranks import WORKER_EXTENSION
from jobs.engines.vllm.stage import ANSWER_COLUMNS, EngineRow, engine_settings, prepare, read_answer
from jobs.engines.vllm.trace_parser import trace_parser

RUNNERS = {"classify": {"runner": "pooling", "convert": "classify"}, "judge": {"runner": "generate"},
           "logprobs": {"runner": "generate"}}


def _logprob_dicts(steps: list | None) -> list[dict[int, dict[str, float]] | None] | None:
    """vLLM's Logprob objects -> plain dicts a Ray object can carry: {token id: {"logprob": value}}."""
    if steps is None:
        return None
    return [None if step is None else {int(t): {"logprob": float(lp.logprob)} for t, lp in step.items()}
            for step in steps]


class VllmServer:
    """One engine, built from `model`'s settings for weights at `path` and `task`, answering every task of its
    runner; `key` names it in the sweep's ledger."""

    def __init__(self, model: WorkerModel, path: str, task: str, key: str, ledger: str | None = None):
        import vllm

        start = time.time()
        self.runner, self.key, self.ledger = RUNNERS[task], key, ledger
        engine_kwargs = engine_settings(model, path, task).kwargs
        if engine_kwargs["tensor_parallel_size"] > 1 and not model.num_gpus:  # the ranks' cores
            os.environ["VLLM_CPU_OMP_THREADS_BIND"] = rank_threads(engine_kwargs["tensor_parallel_size"],
                                                                   sorted(os.sched_getaffinity(0)))
        # whether prompt log-prob rows read the prefix cache (a judge's rows read it inside vLLM, as usual)
        self.reads_cache = bool(engine_kwargs.get("enable_prefix_caching"))
        own_engine_processes()  # its EngineCore process ends with this actor's (jobs.engines.vllm.process_owner)
        self.engine = vllm.AsyncLLMEngine.from_engine_args(vllm.AsyncEngineArgs(
            model=path, **{"worker_extension_cls": WORKER_EXTENSION, **engine_kwargs}, **self.runner))
        self.ids = itertools.count()
        self.in_flight, self.busy_since, self.busy_s = 0, 0.0, 0.0
        # the dtype vLLM was given; the torch settings are this process's, not those of vLLM's engine process
        report(ledger, "started", key, model.name, "vllm", time.time() - start, this_node(), start,
               numerics("cuda" if model.num_gpus else "cpu", str(engine_kwargs["dtype"])))

    async def answer(self, requests: list[Request], task: str, model: WorkerModel, path: str,
                     columns: tuple[str, ...] = ANSWER_COLUMNS, prefix: str = "", keep_messages: bool = False
                     ) -> list[Answer]:
        """Answers to request rows of `task`, in order, prepared with `model`'s settings for the weights at `path`
        (the model file that sent them: files sharing this engine may template differently) and read as
        vllm_stage.read_answer reads them (`columns`, `prefix`); the batch's counts go to the ledger for that
        model. Read here, so an implicit RM's prompt log-probs (a dict per prompt token) never leave the actor."""
        if RUNNERS[task] != self.runner:
            raise ValueError(f"engine {self.key} runs {self.runner}, not task {task}")
        # In a thread: the event loop goes on collecting the engine's outputs for the batches before this one.
        rows = await asyncio.to_thread(
            lambda: [prepare(row, model, path, task, keep_messages) for row in requests])
        reads_cache = task == "logprobs" and self.reads_cache
        if not self.in_flight:
            self.busy_since = time.time()
        self.in_flight += 1
        try:
            groups = await asyncio.gather(*(self._leader_first(rows, group, task, reads_cache)
                                            for group in self._by_prompt(rows, reads_cache)))
        finally:
            self.in_flight -= 1
            if not self.in_flight:
                self.busy_s += time.time() - self.busy_since
        outputs: list[Any] = [None] * len(rows)
        for group, answers in groups:
            for i, out in zip(group, answers):
                outputs[i] = out
        # In a thread, as the rows were prepared: the count decodes each trace a few times over.
        thinking = await asyncio.to_thread(self._trace_columns, outputs, rows, task, model, path)
        busy, self.busy_s = self.busy_s, 0.0
        counts = {"busy_s": busy, "requests": len(rows),
                  "prompt_tokens": sum(len(out.prompt_token_ids or []) for out in outputs),
                  "cached_prompt_tokens": sum(out.num_cached_tokens or 0 for out in outputs),
                  "generated_tokens": sum(len(out.outputs[0].token_ids) for out in outputs
                                          if task != "classify"),
                  "thinking_tokens": sum(counted.get("thinking_tokens") or 0 for counted in thinking)}
        report(self.ledger, "add", self.key, model.name, "vllm", counts)
        return [read_answer({**row, **self._columns(out, task, int(row.get("response_start") or 0)), **counted},
                            task, columns, prefix) for row, out, counted in zip(rows, outputs, thinking)]

    @staticmethod
    def _trace_columns(outputs: list[Any], rows: list[EngineRow], task: str, model: WorkerModel, path: str
                         ) -> list[EngineRow]:
        """Per output, {"thinking_tokens": n} for a thinking judge's generated text, counted on the tokens vLLM
        generated (actors.templating.trace_token_count), and where vLLM's reasoning parser splits its trace, the
        parser's split (jobs.engines.vllm.trace_parser: `parsed_text`, `thinking`, `thinking_finished`); {} for
        every other output."""
        end = model.trace_end if task == "judge" else None
        if end is None:
            return [{} for _ in outputs]
        tpl = templater(path, model.chat_template, revision_for(model, path), bool(model.trust_remote_code),
                        model.enable_thinking)
        parser = trace_parser(model.reasoning_parser, tpl) if model.reasoning_parser else None

        def decode(ids) -> str:
            return tpl.tokenizer.decode(ids, skip_special_tokens=False)  # an end delimiter may be a special token

        def counted(out: Any, row: EngineRow) -> EngineRow:
            if row.get("part") != "text" or row.get("error"):
                return {}
            ids = list(out.outputs[0].token_ids)
            if parser is not None:  # the whole turn's text, a continued turn's text so far included
                split = parser.split(str(row.get("turn_so_far") or "") + out.outputs[0].text, ids, decode)
                return {**split, "parsed_text": split.pop("text")}
            # A turn continued after its closed trace (`turn_so_far`) generates none of the trace.
            return {"thinking_tokens": 0 if row.get("turn_so_far") else trace_token_count(ids, decode, end)}

        return [counted(out, row) for out, row in zip(outputs, rows)]

    @staticmethod
    def _by_prompt(rows: list[EngineRow], reads_cache: bool) -> list[list[int]]:
        """Row indices, those of one prompt (the tokens before the response) together; one each unless the
        rows are prompt log-probs read through the prefix cache."""
        if not reads_cache:
            return [[i] for i in range(len(rows))]
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, row in enumerate(rows):
            groups.setdefault(tuple(row["tokenized_prompt"][:int(row["response_start"])]), []).append(i)
        return list(groups.values())

    async def _leader_first(self, rows: list[EngineRow], group: list[int], task: str, reads_cache: bool
                            ) -> tuple[list[int], list]:
        """The group's first request, then the rest at once: they find its prompt in the prefix cache."""
        first = await self._one(rows[group[0]], task, reads_cache)
        rest = await asyncio.gather(*(self._one(rows[i], task, reads_cache) for i in group[1:]))
        return group, [first, *rest]

    async def _one(self, row: EngineRow, task: str, reads_cache: bool):
        final = await self._ask(row, task, read_cache=reads_cache)
        if reads_cache and (final.num_cached_tokens or 0) >= int(row["response_start"]):
            final = await self._ask(row, task, read_cache=False)  # the cache reached into the response: see above
        return final

    async def _ask(self, row: EngineRow, task: str, read_cache: bool):
        import vllm
        from vllm.inputs import TokensPrompt
        from vllm.v1.engine.exceptions import EngineDeadError

        prompt = TokensPrompt(prompt_token_ids=[int(t) for t in row["tokenized_prompt"]])
        request_id = f"{self.key}-{next(self.ids)}"
        final = None
        try:
            if task == "classify":
                stream = self.engine.encode(prompt, vllm.PoolingParams(task="classify", **row["pooling_params"]),
                                            request_id)
            else:
                params = dict(row["sampling_params"])
                if task == "logprobs":
                    params["skip_reading_prefix_cache"] = not read_cache
                stream = self.engine.generate(prompt, vllm.SamplingParams(**params), request_id)
            async for final in stream:
                pass
        except EngineDeadError:
            self._leave("vLLM's engine process died")
        return final

    def _leave(self, why: str) -> None:
        """End this actor's process as a crash does, so that Ray starts it again (max_restarts: a new engine,
        counted as a start in the ledger) and retries the calls it held there (max_task_retries). An engine
        whose EngineCore process died (a CUDA out-of-memory error or an illegal memory access on a GPU, the OOM
        killer on a CPU) answers every later call with EngineDeadError and never recovers in place; an
        exception would fail the calling Ray Data task and abort the cell's dataset instead."""
        print(f"ragjudge: engine {self.key}: {why}; leaving so that Ray starts it again", flush=True)
        try:
            self.engine.shutdown()  # the rank workers of a tensor-parallel engine, if they outlived the core
        finally:
            os._exit(1)

    @staticmethod
    def _columns(out, task: str, response_start: int) -> EngineRow:
        """The engine's output in read_answer's columns; prompt log-probs from the response on (those before it
        are never read)."""
        if task == "classify":
            return {"embeddings": out.outputs.data.float().tolist()}
        prompt = out.prompt_logprobs
        return {"generated_text": out.outputs[0].text, "logprobs": _logprob_dicts(out.outputs[0].logprobs),
                "prompt_logprobs": None if prompt is None else
                [None] * response_start + _logprob_dicts(prompt[response_start:])}

    async def ranks(self) -> list[dict[str, int]]:
        """Each rank's rank, world size, process id and weights held (jobs.engines.vllm.ranks), in rank order: the only
        sign that a tensor-parallel engine ran as several processes, each holding part of the weights."""
        return await self.engine.collective_rpc("rank_report")

    def shutdown(self) -> None:
        self.engine.shutdown()
