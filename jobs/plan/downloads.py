"""`ragjudge plan`'s weights: per hub repository of the sweep's models (weights, references and tokenizers: the
repositories `ragjudge fetch` asks for, jobs.engines.weights.hub_weights), whether it is in the Hugging Face
cache already and, if not, its bytes and the time to fetch them at a stated bandwidth.

A plan never asks the Hub: a cached snapshot's bytes are those of the files its engines read (what fetch
counts); an uncached repository's are params_b x the bytes of the model's dtype (4 for float32, else 2: the
16-bit checkpoints hub models ship), the reference at its model's size, as the rest of the plan counts it; a
repository only tokenizers come from has no size until it is fetched (megabytes). Downloads run on CPU, one at a time, ahead of the engines (`ragjudge fetch`, or run's prefetch): the first
engine waits for its own weights, later ones only where the downloads fall behind the engines, so the time is
set against the makespan rather than added to GPU-hours.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from jobs.config import ModelConfig
from jobs.engines.weights import HubWeights, cached, gb, hub_weights


@dataclass(frozen=True)
class Download:
    repo: str  # repository[@revision]
    users: tuple[str, ...]  # "models.NAME.KEY"
    bytes: int | None  # None: unknown (no params_b)
    cached: bool
    whence: str  # how `bytes` was had


def plan_downloads(models: Iterable[ModelConfig]) -> list[Download]:
    """One Download per hub repository (and revision) of the models' weights, references and tokenizers, in sweep
    order."""
    by_name = {model.name: model for model in models}
    return [_download(weights, by_name) for weights in hub_weights(by_name.values())]


def _download(weights: HubWeights, by_name: dict[str, ModelConfig]) -> Download:
    if found := cached(weights):
        return Download(weights.what, weights.users, found.bytes, True, f"in the cache, commit {found.commit[:12]}")
    sized = [user for user in weights.users if not user.endswith(".tokenizer")]
    if not sized:
        return Download(weights.what, weights.users, None, False, "tokenizer files only: size unknown until fetched")
    model = by_name[sized[0].split(".")[1]]  # sized as its first user's weights: "models.NAME.KEY"
    if model.params_b is None:
        return Download(weights.what, weights.users, None, False, "no params_b: size unknown")
    width = 4 if model.dtype == "float32" else 2
    return Download(weights.what, weights.users, round(model.params_b * 1e9 * width), False,
                    f"params_b {model.params_b:g} x {width} bytes ({model.dtype})")


def format_downloads(downloads: list[Download], mb_per_s: float, makespan_s: float | None) -> str:
    """A line per repository, then the total: bytes not cached, time at `mb_per_s`, set against the makespan."""
    if not downloads:
        return "Weights: no hub repositories (built-in models, local folders or API models only)."
    lines = [(f"Weights from the Hugging Face Hub, fetched on CPU one at a time ahead of the engines (`ragjudge fetch`, "
              f"or run's prefetch), at {mb_per_s:g} MB/s (--download-mb-per-s):")]
    for d in downloads:
        size = "?" if d.bytes is None else gb(d.bytes)
        when = "cached" if d.cached else "" if d.bytes is None else f"{d.bytes / 1e6 / mb_per_s / 60:6.1f} min"
        lines.append(f"  {d.repo:56} {size:>9}  {when:>10}  {d.whence}")
    todo = [d for d in downloads if not d.cached and d.bytes is not None]
    total = sum(d.bytes for d in todo)
    seconds = total / 1e6 / mb_per_s
    line = (f"Download: {total / 1e9:.1f} GB for {len(todo)} of the {len(downloads)} hub repositories, not cached "
            f"({sum(d.cached for d in downloads)} cached, {sum(d.bytes is None for d in downloads)} of unknown size) at "
            f"{mb_per_s:g} MB/s: "
            f"{seconds / 3600:.2f} h, not in the GPU-hours above (the first engine waits for its own weights).")
    lines.append(line)
    if makespan_s and seconds > makespan_s:
        lines.append(f"The downloads take longer than the makespan ({makespan_s / 3600:.2f} h): engines will wait "
                     "for weights; run `ragjudge fetch SWEEP` before the GPUs are taken.")
    return "\n".join(lines)
