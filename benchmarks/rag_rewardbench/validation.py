"""What `ragjudge validate` scores a model on (the protocol's validation hooks): well-formed pairs in file order,
the six Appendix D pairs when a sweep has no data of this benchmark, and each pair's verdict and the scores it
is read from (rows.combine's columns)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchmarks.paths import project_path

SAMPLE = "data/rag_rewardbench_appendix_d.jsonl"  # the paper's Appendix D pairs, relative to the project root


def validation_items(items: Iterable[dict[str, Any]], n: int) -> tuple[list[dict[str, Any]], int]:
    """The first `n` well-formed pairs of `items` in order, and the bad rows skipped before the last of them
    (all of them when there are fewer than `n`); reads no further than it needs."""
    chosen: list[dict[str, Any]] = []
    skipped = 0
    if n < 1:
        return chosen, skipped
    for item in items:
        if item.get("error"):
            skipped += 1
            continue
        chosen.append(item)
        if len(chosen) == n:
            break
    return chosen, skipped


def validation_sample() -> str:
    """The bundled Appendix D pairs, one per category."""
    return str(project_path(SAMPLE))


def pair_scores(row: dict[str, Any], kind: str) -> list[float | None]:
    """The numbers a pair's verdict is read from: a scorer's two scores, an implicit RM's two rewards, a judge's
    candidate log-probs in both orders."""
    if kind == "discriminative":
        return [row["score_chosen"], row["score_reject"]]
    if kind == "implicit":
        return [row["reward_chosen"], row["reward_reject"]]
    if kind == "generative":
        return [*(row["logprobs_cr"] or [None, None]), *(row["logprobs_rc"] or [None, None])]
    raise ValueError(f"no pair scores for {kind!r} models")


def pair_verdict(row: dict[str, Any], kind: str) -> Any:
    """Which response the model prefers: chosen or not (a scorer), its pick in each order (a judge)."""
    if kind == "generative":
        return (row["pick_cr"], row["pick_rc"])
    return row["correct"] == 1.0


def validation_verdict(row: dict[str, Any], kind: str) -> tuple[Any, list[float | None]]:
    """A pair row's verdict and scores, as validate compares two scorings of it."""
    return pair_verdict(row, kind), pair_scores(row, kind)
