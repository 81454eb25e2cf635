"""Shared judges: one Ray Serve LLM deployment per judge, used by every cell of a sweep, scaled by its queue.

A 70B judge then loads once for the whole sweep instead of once per benchmark, and Serve adds replicas (up to
`max_replicas`) while requests queue and removes them when idle. Cells reach it through ray.data.llm's
ServeDeploymentProcessorConfig with completion requests that carry our token ids (jobs.engines.vllm.stage.prepare),
so a shared judge sees exactly the prompts a per-cell engine would.
"""
from __future__ import annotations

import threading
import time
from functools import partial
from typing import Any

from actors.worker_model import WorkerModel
from benchmarks.boundary_types import JsonObject
from benchmarks.row_types import Answer, JudgePart
from jobs.engines.vllm import stage as vllm_stage

DEPLOYMENT = "judge"
_DEPLOYING = threading.Lock()
EVERY_S = 10.0  # seconds between a deployment's wait lines


def app_name(model: str) -> str:
    """The Serve application of the shared judge named `model`."""
    return f"ragjudge-{model}"


def deploy(model: WorkerModel, timeout_s: float, log: Any = print) -> bool:
    """Start the model's deployment unless it is already running; True if this call started it. Until Serve
    says RUNNING, a line every 10 s ('shared judge J deploying: 20 s of 1800 s; Serve: DEPLOYING ...'); past
    `timeout_s` (cluster.engine_start_s) TimeoutError, one line with Serve's last word."""
    with _DEPLOYING:  # cells run in threads: two cells of one judge must not both start it
        return _deploy(model, timeout_s, log)


def _deploy(model: WorkerModel, timeout_s: float, log: Any) -> bool:
    from ray import serve
    from ray.serve.llm import LLMConfig, ModelLoadingConfig, build_llm_deployment

    app = app_name(model.name)
    status = serve.status().applications.get(app)
    if status is not None and status.status == "RUNNING":
        return False
    engine_kwargs, runtime_env, placement = vllm_stage.engine_settings(model, model.path, "judge")
    if placement is None:  # GPUs: one bundle per tensor-parallel rank
        placement = {"bundles": [{"GPU": 1, "CPU": float(model.num_cpus)}] * int(model.tensor_parallel_size)}
    config = LLMConfig(
        model_loading_config=ModelLoadingConfig(model_id=model.name, model_source=model.path),
        engine_kwargs=engine_kwargs,
        runtime_env=runtime_env,
        placement_group_config=placement,
        deployment_config={"name": DEPLOYMENT, "autoscaling_config": {
            "min_replicas": int(model.min_replicas), "max_replicas": int(model.max_replicas),
            "target_ongoing_requests": int(model.target_ongoing_requests),
            "downscale_delay_s": float(model.downscale_delay_s), "upscale_delay_s": 1.0}},
    )
    serve.run(build_llm_deployment(config, override_serve_options={"name": DEPLOYMENT}), name=app, blocking=False)
    start = last_line = time.monotonic()
    said = "not yet listed"
    while (waited := time.monotonic() - start) < timeout_s:
        status = serve.status().applications.get(app)
        if status is not None and status.status == "RUNNING":
            return True
        if status is not None and status.status == "DEPLOY_FAILED":
            raise RuntimeError(f"shared judge '{model.name}' failed to deploy: {status.message}")
        if status is not None:
            said = f"{status.status}" + (f": {' '.join(str(status.message).split())[:200]}" if status.message else "")
        if time.monotonic() - last_line >= EVERY_S:
            log(f"shared judge {model.name} deploying: {waited:.0f} s of {timeout_s:.0f} s; Serve: {said}")
            last_line = time.monotonic()
        time.sleep(min(2.0, max(0.0, timeout_s - waited)))
    raise TimeoutError(f"shared judge '{model.name}' did not start in {timeout_s:.0f} s (cluster.engine_start_s); "
                      f"Serve: {said}")


def _request(row: JudgePart, model: WorkerModel) -> JsonObject:
    """A judge request part -> an OpenAI completion request over our token ids."""
    prepared = vllm_stage.prepare(row, model, model.path, "judge")
    params = prepared.pop("sampling_params")
    prompt = prepared.pop("tokenized_prompt")
    kwargs = {"model": model.name, "prompt": prompt, **params, "return_tokens_as_token_ids": True, "stream": False}
    if "logprob_token_ids" in params:
        # The API wants `logprobs` beside `logprob_token_ids`; it then reports exactly the listed tokens.
        kwargs["logprobs"] = len(params["logprob_token_ids"])
    return {**prepared, "method": "completions", "dtype": "CompletionRequest", "request_kwargs": kwargs}


def _answer(row: JsonObject, columns: tuple[str, ...]) -> Answer:
    """A completion response -> the engine row shape vllm_stage.read_answer reads."""
    choice = row["choices"][0]
    steps = (choice.get("logprobs") or {}).get("top_logprobs") or [{}]
    # With return_tokens_as_token_ids the API names tokens "token_id:<id>".
    first = {int(token.rsplit(":", 1)[1]): {"logprob": logprob} for token, logprob in steps[0].items()}
    engine_row = {**row, "generated_text": choice["text"], "logprobs": [first]}
    return vllm_stage.read_answer(engine_row, "judge", columns)


def _request_class() -> type:
    """CompletionRequest that accepts numpy arrays: Ray Data hands list columns (our token ids) over as arrays."""
    from pydantic import model_validator
    from ray.serve.llm.openai_api_models import CompletionRequest

    class TokenIdsCompletionRequest(CompletionRequest):
        @model_validator(mode="before")
        @classmethod
        def _plain_lists(cls, data: Any) -> Any:
            return {k: v.tolist() if hasattr(v, "tolist") else v for k, v in data.items()}

    return TokenIdsCompletionRequest


def answer(requests, model: WorkerModel):
    """The answers of the model's shared deployment to `requests` (a Ray Dataset of judge request rows)."""
    from ray.data.llm import ServeDeploymentProcessorConfig, build_processor

    config = ServeDeploymentProcessorConfig(
        deployment_name=DEPLOYMENT, app_name=app_name(model.name), dtype_mapping={"CompletionRequest": _request_class()},
        batch_size=int(model.batch_size), concurrency=(int(model.min_actors), int(model.max_actors)))
    light = {"num_cpus": 0.25}
    processor = build_processor(config, preprocess=partial(_request, model=model),
                                postprocess=partial(_answer, columns=vllm_stage.ANSWER_COLUMNS),
                                preprocess_map_kwargs=light, postprocess_map_kwargs=light)
    return processor(requests.flat_map(vllm_stage.split_judge_request, num_cpus=0.25))
