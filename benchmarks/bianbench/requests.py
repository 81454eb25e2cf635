"""Bi'anBench requests: one per sampled run of an item, each with its own seed (the paper reports the mean of
three runs)."""
from __future__ import annotations

from benchmarks.bianbench.fields import BENCHMARK, KINDS
from benchmarks.bianbench.options import Options
from benchmarks.bianbench.prompts import prompt, template_for, templates_in_force
from benchmarks.row_types import Item, Request
from benchmarks.stats import stable_seed

# The parse-free verdict: the engine opens the answer with the prompt's JSON up to the verdict's value and
# reads the log-prob of each candidate's first token there. This asks for the verdict *before* the reasoning
# the prompt asks for (REASONING comes first in it), so it is a different protocol from the paper's, which
# parses the verdict written after the reasoning; both are recorded, `combine(verdict=...)` picks the scored one.
VERDICT_PREFILL = {"en": '{"SCORE": "', "zh": '{"判断": "'}
VERDICT_CANDIDATES = {"en": ("PASS", "FAIL"), "zh": ("通过", "失败")}  # aligned: PASS first


def expand(item: Item, kind: str, options: Options) -> list[Request]:
    """One request per run (variant run0..run{n-1}), each with its own seed from the item id and run.

    An item whose (task, language) has no template gets no requests; combine turns it into error rows naming
    the pair, so one missing prompt does not stop the cell (check_items finds them before a run).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown model kind {kind!r} for {BENCHMARK}; expected one of {KINDS}")
    template = template_for(templates_in_force(options), item)
    if not template:
        return []
    runs, temperature, top_p = options.sampling
    messages = [{"role": "user", "content": prompt(item, template)}]
    return [
        {"request_id": f"{item['item_id']}#run{run}", "item_id": item["item_id"], "subset": item["subset"],
         "variant": f"run{run}", "messages": messages, "temperature": float(temperature),
         "top_p": float(top_p), "max_tokens": int(options.max_tokens),
         "seed": stable_seed(item["item_id"], f"run{run}") % 2**31,
         "prefill": VERDICT_PREFILL[item["language"]], "candidates": list(VERDICT_CANDIDATES[item["language"]])}
        for run in range(int(runs))
    ]
