"""Requests as vLLM takes them, and its answers as our rows: the Ray Data side of every vLLM engine.

We template and tokenize ourselves (actors.templating) and hand the engine token ids with per-row sampling
or pooling parameters: `ask` runs in light Ray Data tasks and sends a batch of request rows to the sweep's
long-lived engine for the model (jobs.engines.vllm.server), which `prepare`s them in its own process, where the
tokenizer is loaded once for the sweep, and turns the engine's outputs back into our rows with `read_answer`.
A shared judge behind Ray Serve (jobs.engines.vllm.serve_judge) prepares in its processor's tasks and reads the same way.
What each kind asks of the engine:
- discriminative: `classify` pooling with the activation off, so the score is the raw logit;
- generative: a generation (greedy, or the request's own sampling: `temperature`, `top_p`, `seed`,
  `max_tokens`) and, for a request with a `prefill` and `candidates`, a second engine row sharing the engine:
  one token after the prefill, for which vLLM reports the log-probs of exactly the candidate tokens
  (`logprob_token_ids`); the driver merges the parts (`n_parts`) back into one answer;
- implicit: prompt log-probs of the closed conversation, summed over the response span; with a reference
  model, a second engine adds the reference's sums.
"""
from __future__ import annotations

from typing import NamedTuple

import pyarrow as pa

from actors.built_in_models import revision_for
from actors.engine_calls import call_engine
from actors.hardware import cpu_engine_env, resolve_dtype
from actors.sampling import REQUEST_INPUTS, Sampling, text_sampling
from actors.templating import overflow, templater
from actors.worker_model import WorkerModel
from benchmarks.boundary_types import Kwargs
from benchmarks.row_types import Answer, JudgePart, Request

# ray.data.llm (the shared judge's Serve processor) numbers its rows in a `request_id` column of its own,
# overwriting ours: ours travels under another name and is restored afterwards.
_OUR_ID = "ragjudge_request_id"
# Request columns every answer row carries on.
ANSWER_COLUMNS = ("request_id", "item_id", "subset", "variant", "part", "n_parts", "n_tokens", "error", "truncated")


class EngineRow(JudgePart, total=False):
    """A request row as the engine's actor prepares it (prepare) and fills it with the engine's output
    (VllmServer) before read_answer reads it: the request's columns but its inputs, and these."""

    ragjudge_request_id: str  # the request's id, under _OUR_ID's name while ray.data.llm holds its own
    messages: list[dict[str, str]]  # kept only for an implicit RM's reference engine, which templates them again
    tokenized_prompt: list[int]  # the templated prompt (one stand-in token where it overflows)
    pooling_params: dict[str, bool]  # classify: vLLM's PoolingParams keywords
    sampling_params: Sampling  # judge and logprobs: vLLM's SamplingParams keywords
    response_start: int  # logprobs: where the scored response starts in the prompt
    candidate_ids: list[int]  # judge with a prefill: the candidates' first token ids
    turn_so_far: str  # judge: the request's continue_text ("" for none), generated after and the text's start
    n_tokens: int
    error: str | None
    truncated: bool
    # the engine's output
    embeddings: list[float]  # classify
    generated_text: str  # judge
    parsed_text: str | None  # judge, its trace split by vLLM's reasoning parser: the answer after it (and these)
    thinking: str
    thinking_finished: bool
    logprobs: list[dict[int, dict[str, float]]]  # judge: per generated token, the top log-probs by token id
    prompt_logprobs: list[dict[int, dict[str, float]] | None] | None  # logprobs: per prompt token, from the response on


def split_judge_request(row: Request) -> list[JudgePart]:
    """One judge request -> its text part and, with a prefill, its verdict part (merged by `n_parts` downstream)."""
    parts = ("text", "verdict") if row.get("prefill") is not None else ("text",)
    return [{**row, "part": part, "n_parts": len(parts)} for part in parts]


def prepare(row: Request, model: WorkerModel, path: str, task: str, keep_messages: bool = False
            ) -> EngineRow:
    """Request row -> engine row. `task` is what this engine computes: classify | judge | logprobs.

    A prompt over the context limit is not sent as is: the row carries its error and a one-token stand-in
    prompt goes through instead, so one long pair never fails a batch and nothing is truncated silently.
    """
    tpl = templater(path, model.chat_template, revision_for(model, path), bool(model.trust_remote_code),
                    model.enable_thinking)
    messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in row["messages"]]
    out = {key: value for key, value in row.items() if key not in REQUEST_INPUTS and key != "request_id"}
    out[_OUR_ID] = row["request_id"]
    if keep_messages:
        out["messages"] = row["messages"]
    if task == "classify":
        ids = tpl.closed(messages)
        out["pooling_params"] = {"use_activation": False}
    elif task == "logprobs":
        ids, out["response_start"] = tpl.response(messages)
        # No detokenizing: we read the log-probs' values, never their text.
        out["sampling_params"] = {"max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 0, "detokenize": False}
    else:
        # Both parts carry the same keys with the same types: Ray Data stores the column in one block, and a
        # key missing from some rows becomes a null that turns the other rows' integers into floats.
        params = text_sampling(row, model)
        out["turn_so_far"] = str(row.get("continue_text") or "")  # written before the generated text
        if row.get("prefill") is not None:  # both parts ask for the candidates' log-probs: the same keys
            verdict = tpl.verdict(messages, str(row["prefill"]), [str(c) for c in row["candidates"]],
                                  out["turn_so_far"])
            out["candidate_ids"] = params["logprob_token_ids"] = verdict.candidate_ids
        if row["part"] == "verdict":
            ids = verdict.prompt_ids
            params.update(max_tokens=1, temperature=0.0)
        else:
            ids = tpl.continued(messages, out["turn_so_far"]) if out["turn_so_far"] else tpl.opened(messages)
        out["sampling_params"] = params
    problem = overflow(len(ids), int(model.max_model_len), generates=task != "classify")
    out["n_tokens"] = max(len(ids), int(row.get("n_tokens") or 0))
    out["error"] = row.get("error") or problem
    out["truncated"] = bool(row.get("truncated")) or problem is not None
    out["tokenized_prompt"] = ids[:1] if problem else ids
    return out


def read_answer(row: EngineRow, task: str, columns: tuple[str, ...], prefix: str = "") -> Answer:
    """Processor output row -> the request's columns plus this engine's answer (large outputs dropped)."""
    out = {key: row[key] for key in columns if key in row}
    out["request_id"] = row[_OUR_ID]
    failed = bool(row.get("error"))
    if task == "classify":
        out["score"] = None if failed else float(row["embeddings"][0])
    elif task == "logprobs":
        steps = [] if failed else row["prompt_logprobs"][int(row["response_start"]):]
        values = [next(iter(step.values()))["logprob"] for step in steps]
        out[f"{prefix}logp_sum"] = None if failed else float(sum(values))
        out[f"{prefix}logp_mean"] = None if failed or not values else float(sum(values)) / len(values)
        if not prefix:
            out["n_response_tokens"] = None if failed else len(values)
    elif row["part"] == "verdict":
        top = {} if failed else row["logprobs"][0]
        by_id = {int(token): info["logprob"] for token, info in top.items() if info is not None}
        out["candidate_logprobs"] = [by_id.get(int(t)) for t in row["candidate_ids"]]
    else:
        out["text"] = None if failed else str(row.get("turn_so_far") or "") + str(row["generated_text"])
        if "thinking_tokens" in row:  # a thinking judge's, counted by its server (jobs.engines.vllm.server)
            out["thinking_tokens"] = row["thinking_tokens"]
        if "thinking_finished" in row:  # split by vLLM's reasoning parser (jobs.engines.vllm.trace_parser)
            out.update(text=row["parsed_text"], thinking=row["thinking"], thinking_finished=row["thinking_finished"])
    return out


class EngineSettings(NamedTuple):
    """What a vLLM engine is built with; a tuple, so `kwargs, env, placement = engine_settings(...)` reads it."""

    kwargs: Kwargs  # vllm.AsyncEngineArgs / vllm.LLM keyword arguments (JSON-like: hashed into its name)
    runtime_env: Kwargs | None  # Ray's runtime_env of its actor (CPU: the KV cache size, the CPU env)
    placement: Kwargs | None  # Ray Serve placement bundles (CPU: one bundle of num_cpus per rank)


def engine_settings(model: WorkerModel, path: str, task: str) -> EngineSettings:
    """vLLM engine arguments, runtime env and placement bundles, for per-cell engines and shared judges alike."""
    device = "cuda" if model.num_gpus else "cpu"
    engine_kwargs = {
        "dtype": resolve_dtype(model.dtype, device),
        "max_model_len": int(model.max_model_len),
        "tensor_parallel_size": int(model.tensor_parallel_size),
        # Judges and implicit RMs (whose prompt log-probs read the cache only through VllmServer); our
        # classifiers pool the whole prompt.
        "enable_prefix_caching": task in ("judge", "logprobs"),
        "enforce_eager": bool(model.enforce_eager),
        "revision": revision_for(model, path),
        "trust_remote_code": bool(model.trust_remote_code),  # the model file's own setting, never global
    }
    runtime_env, placement = None, None
    if not model.num_gpus:  # vLLM's CPU build: a bounded KV cache and CPU bundles for the engine
        runtime_env = {"env_vars": {"VLLM_CPU_KVCACHE_SPACE": str(int(model.kv_cache_gib)), **cpu_engine_env()}}
        # A seeded request whose prompt is prefilled in chunks makes vLLM rewind its sampler's generator, which
        # a CPU torch.Generator cannot do ("CPU Generator does not use offset": the engine dies). Whole-prompt
        # prefills never rewind, so seeded sampling (Bi'anBench's three runs) works on CPU too.
        engine_kwargs["enable_chunked_prefill"] = False
        engine_kwargs["max_num_batched_tokens"] = max(int(model.max_model_len), 8192)
        if int(model.tensor_parallel_size) > 1:  # ranks as processes: the CPU build refuses Ray's executor
            engine_kwargs["distributed_executor_backend"] = "mp"
        placement = {"bundles": [{"CPU": float(model.num_cpus)}] * int(model.tensor_parallel_size)}
    engine_kwargs.update(model.engine_args or {})  # the model file's word is last
    return EngineSettings(engine_kwargs, runtime_env, placement)


def ask(batch, model: WorkerModel, path: str, task: str, server: str, prefix: str = "",
        columns: tuple[str, ...] = ANSWER_COLUMNS, keep_messages: bool = False):
    """`map_batches` function: a batch of request rows (Arrow) -> its answer rows, from the named server actor
    (jobs.engines.vllm.server) that holds the engine of (model, path, task) for the sweep, perhaps shared with other
    model files and tasks. The rows go as they are: the engine's process templates, tokenizes and reads them.
    Templated here, every Ray Data worker process loaded transformers and the tokenizer for itself, taking the
    CPU the engine's start needed (docs/measurements.md, "The real size on the AVX2 machine: 1,485 pairs at
    Table 4's lengths (the tiny classifier)")."""
    answers = call_engine(server, "answer", batch.to_pylist(), task, model, path, columns, prefix, keep_messages)
    # Not Table.from_pylist: it takes the columns of the first row only, and a judge's text and verdict parts
    # answer in different columns.
    keys = list(dict.fromkeys(key for answer in answers for key in answer))
    return pa.Table.from_pydict({key: [answer.get(key) for answer in answers] for key in keys})
