"""`ragjudge fetch SWEEP [--pin]`: every Hugging Face Hub repository the sweep's models load (weights, reference
models, tokenizers; its benchmarks' judges too) fetched into the shared Hugging Face cache on this machine's
CPUs, before any engine (or GPU) waits for it.

Only the files each engine reads come down (its weights in one format, config, tokenizer: the engine's `loads`).
Everything is asked first: each repository's files and the bytes still missing (a gated repository this
machine may not read fails here), then the disk: nothing is fetched when the cache's disk cannot hold it all.
Each request to the Hub gives up after HF_HUB_ETAG_TIMEOUT seconds without an answer, with a line while it
waits; once the Hub gave no answer, the repositories after it are not asked. A repository whose files are in
the cache is said to be cached and not fetched; built-in models and local folders are skipped with a word.
Downloads resume partial files (snapshot_download). The last line counts what could not be fetched (exit 1).
`--pin` writes the commit each model file's own weights resolved to into its `revision:`, so later runs load
exactly these weights.
"""
from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass
from typing import Any

from jobs.config import ModelConfig, SweepConfig
from jobs.engines.base import engine_of
from jobs.engines.hub_requests import hub_timeout_s
from jobs.engines.weights import (
    HubWeights,
    Survey,
    download,
    free_bytes,
    gated_message,
    gb,
    hub_weights,
    source_of,
    survey,
    unpinned,
    weight_specs,
)
from jobs.loading import load_model, load_sweep, model_file, pin_revision
from jobs.sweep.pipeline import route_models


def add(commands: Any) -> None:
    parser = commands.add_parser("fetch", help="download the sweep's hub weights into the Hugging Face cache")
    parser.add_argument("sweep")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, as for run")
    parser.add_argument("--pin", action="store_true",
                        help="write the commit each model file's weights resolved to into its `revision:`")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from huggingface_hub import constants

    sweep = load_sweep(args.sweep, args.overrides)
    models = sweep_models(sweep)
    for line in skipped(models):
        print(line)
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        print("ragjudge fetch: HF_HUB_OFFLINE=1 forbids fetching; unset it")
        return 2
    wanted = hub_weights(models)
    print(f"asking the Hub ({constants.ENDPOINT}) about {len(wanted)} repositories, each request up to "
          f"{hub_timeout_s():g} s without an answer (HF_HUB_ETAG_TIMEOUT)")
    commits, failed, to_fetch, in_cache = {}, [], [], 0
    silent: str | None = None  # the repository the Hub gave no answer about: those after it are not asked
    for weights in wanted:
        found = _survey(weights) if silent is None else Unanswered(
            f"not asked: the Hub gave no answer about {silent}; run again once it answers")
        if isinstance(found, Unanswered):
            failed.append(weights.what)
            print(f"cannot fetch {weights.what} ({', '.join(weights.users)}): {found.why}")
            silent = silent or (None if found.reached else weights.what)
            continue
        commits[(weights.repo, weights.revision)] = found.commit
        if found.missing_files == 0:
            in_cache += 1
            print(f"cached {weights.what}: {gb(found.total_bytes)}, commit {found.commit}")
        else:
            to_fetch.append((weights, found))
    need, free = sum(s.missing_bytes for _, s in to_fetch), free_bytes()
    print(f"to fetch: {len(to_fetch)} of {len(wanted)} repositories, {gb(need)} ({in_cache} cached, {len(failed)} "
          f"cannot be fetched); {gb(free)} free for the cache ({constants.HF_HUB_CACHE})")
    if need > free:
        print(f"ragjudge fetch: {gb(need)} do not fit in the {gb(free)} free: nothing fetched; free space or set "
              "HF_HUB_CACHE to a larger disk")
        return 1
    for i, (weights, found) in enumerate(to_fetch, 1):
        print(f"[{i}/{len(to_fetch)}] fetching {weights.what} for {', '.join(weights.users)}: "
              f"{gb(found.missing_bytes)} in {found.missing_files} files")
        start = time.perf_counter()
        try:
            download(weights, print, found=found)
        except Exception as e:  # noqa: BLE001 - one repository failing leaves the others to fetch
            failed.append(weights.what)
            print(f"[{i}/{len(to_fetch)}] failed {weights.what}: {type(e).__name__}: {_first_line(e)}")
            continue
        seconds = time.perf_counter() - start
        print(f"[{i}/{len(to_fetch)}] fetched {weights.what}: {gb(found.missing_bytes)} in {seconds:.1f} s "
              f"({found.missing_bytes / 1e6 / max(seconds, 1e-9):.1f} MB/s), commit {found.commit}")
    if args.pin:
        for line in pin(models, commits, sweep):
            print(line)
    elif names := unpinned(models):
        print(f"{len(names)} model files load hub weights at no commit sha ({', '.join(names)}): "
              "`ragjudge fetch SWEEP --pin` writes the commits fetched into their `revision:`")
    if failed:
        print(f"ragjudge fetch: {len(failed)} of {len(wanted)} repositories not fetched ({', '.join(failed)}), "
              "the reason for each above: fix it and run the same command again (what was fetched stays)")
    return 1 if failed else 0


def sweep_models(sweep: SweepConfig) -> list[ModelConfig]:
    """The sweep's models, then the judges its benchmarks route requests to that are not among them."""
    models = dict(sweep.models)
    for bench in sweep.benchmarks.values():
        judges, _ = route_models(bench, sweep)
        for name, judge in judges.items():
            models.setdefault(name, judge)
    return list(models.values())


def skipped(models: list[ModelConfig]) -> list[str]:
    """A line per model, or weight key, that names nothing on the Hub."""
    lines = []
    for model in models:
        if not engine_of(model).weights:
            lines.append(f"skip {model.name}: engine {model.engine} loads no weights here")
        for key, spec in weight_specs(model).items():
            if (source := source_of(spec)) != "hub":
                lines.append(f"skip models.{model.name}.{key}: {spec} is a {source} model, not on the Hub")
    return lines


@dataclass(frozen=True)
class Unanswered:
    """Why a repository cannot be fetched; `reached` is False where the Hub itself gave no answer."""

    why: str
    reached: bool = True


def _survey(weights: HubWeights) -> Survey | Unanswered:
    """The Survey of one repository, or why it cannot be fetched (gated, not found, the Hub unreachable)."""
    from huggingface_hub import constants
    from huggingface_hub.errors import DryRunError, GatedRepoError, HfHubHTTPError

    try:
        return survey(weights)
    except Exception as e:  # noqa: BLE001 - not found, no such revision, unreachable: said, and the rest fetched
        # A dry run that cannot list the repository raises DryRunError from the Hub's own answer: say that one.
        cause = e.__cause__ if isinstance(e, DryRunError) and isinstance(e.__cause__, Exception) else e
        if isinstance(cause, GatedRepoError):
            return Unanswered(gated_message(weights.repo))
        said = type(cause).__name__ + (f": {_first_line(cause)}" if _first_line(cause) else "")
        if isinstance(e, DryRunError) and not isinstance(cause, HfHubHTTPError):  # no connection, or no answer
            return Unanswered(f"the Hub ({constants.ENDPOINT}) cannot be reached: {said} (each request waits up to "
                              f"{hub_timeout_s():g} s for an answer: HF_HUB_ETAG_TIMEOUT); check HF_ENDPOINT, the "
                              "network and any proxy", reached=False)
        return Unanswered(said)


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else ""


def pin(models: list[ModelConfig], commits: dict[tuple[str, str | None], str], sweep: SweepConfig) -> list[str]:
    """Each hub model file's `revision:` set to the commit its weights resolved to; a line per model."""
    lines = []
    for model in models:
        commit = commits.get((model.path, model.revision))
        if not engine_of(model).weights or source_of(model.path) != "hub" or commit is None:
            continue
        source = model_file(model.name, sweep.conf)
        if source is None or load_model(model.name, str(source), sweep.conf).path != model.path:
            lines.append(f"cannot pin {model.name}: no model file conf/models/{model.name}.yaml with path "
                         f"{model.path} (inline in the sweep?): set revision: {commit} by hand")
            continue
        before = pin_revision(source, commit)
        lines.append(f"{model.name}: revision {commit} already pinned in {source}" if before is None else
                     f"pinned {model.name}: revision {commit}{f' (was {before})' if before else ''} in {source}")
    return lines
