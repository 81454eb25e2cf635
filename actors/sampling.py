"""What every engine reads from a request besides its messages: the generation's sampling parameters."""
from __future__ import annotations

from typing import TypedDict

from actors.worker_model import WorkerModel
from benchmarks.row_types import Request

# Request columns engines consume; answer rows do not carry them on.
REQUEST_INPUTS = ("messages", "prefill", "candidates", "temperature", "top_p", "seed", "max_tokens")
# What text_sampling gives every generation request, by our names (an API model's `api_params` renames or drops them).
SAMPLING_PARAMS = ("max_tokens", "temperature", "top_p", "seed")


class Sampling(TypedDict, total=False):
    """A generation's parameters by our names, which are also vLLM's SamplingParams keywords."""

    max_tokens: int
    temperature: float
    top_p: float
    seed: int
    logprob_token_ids: list[int]  # vLLM only: the log-probs of these tokens (a judge's candidates)


def text_sampling(row: Request, model: WorkerModel) -> Sampling:
    """The generation's parameters: the request's own where its benchmark has a sampling protocol (e.g.
    temperature 0.8 over three seeded runs), else greedy up to the model's `max_new_tokens`. Every row gets the
    same keys and types, because Ray Data stores a column of dicts as one Arrow struct."""
    return {"max_tokens": int(row.get("max_tokens") or model.max_new_tokens),
            "temperature": float(row.get("temperature") or 0.0),
            "top_p": float(row.get("top_p") or 1.0),
            "seed": int(row.get("seed") or 0)}
