"""What every engine reads from a request besides its messages: the generation's sampling parameters."""
from __future__ import annotations

from typing import TypedDict

from actors.worker_model import WorkerModel
from benchmarks.row_types import Request

# Request columns engines consume; answer rows do not carry them on.
REQUEST_INPUTS = ("messages", "prefill", "candidates", "temperature", "top_p", "seed", "max_tokens", "continue_text")
# What text_sampling gives every generation request, by our names (an API model's `api_params` renames or drops them).
SAMPLING_PARAMS = ("max_tokens", "temperature", "top_p", "seed")


class Sampling(TypedDict, total=False):
    """A generation's parameters by our names, which are also vLLM's SamplingParams keywords."""

    max_tokens: int
    temperature: float
    top_p: float
    seed: int
    stop: list[str]  # a thinking judge's first generation under a budget: its trace's end delimiter ...
    include_stop_str_in_output: bool  # ... written into the text, which says the trace ended
    logprob_token_ids: list[int]  # vLLM only: the log-probs of these tokens (a judge's candidates)


def text_sampling(row: Request, model: WorkerModel) -> Sampling:
    """The generation's parameters: the request's own where its benchmark has a sampling protocol (e.g.
    temperature 0.8 over three seeded runs), else greedy up to the model's `max_new_tokens`. Every row gets the
    same keys and types, because Ray Data stores a column of dicts as one Arrow struct. A thinking judge with a
    `reasoning.budget_tokens` generates a request's trace up to its end delimiter or the budget, whichever comes
    first; the answer after a trace cut there is asked for in a request of its own, which continues the turn
    (`continue_text`: jobs.flow.thinking_rounds) under the request's own limit, as every row of that round is."""
    sampling: Sampling = {"max_tokens": int(row.get("max_tokens") or model.max_new_tokens),
                          "temperature": float(row.get("temperature") or 0.0),
                          "top_p": float(row.get("top_p") or 1.0),
                          "seed": int(row.get("seed") or 0)}
    budget = (model.reasoning or {}).get("budget_tokens")
    if budget and not row.get("continue_text"):
        sampling.update(max_tokens=int(budget), stop=[str(model.trace_end)], include_stop_str_in_output=True)
    return sampling
