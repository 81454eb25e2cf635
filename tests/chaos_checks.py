"""The invariants every chaos seed keeps (issue 44 item 2), each a function returning problems, one line each,
read from the store directly (not through the code under test):

- every cell done (a cell that failed on the way says why in one line and is done after a plain rerun);
- each cell's metrics.json equal key by key to the clean run's, time fields aside (TIME_FIELDS);
- in each cell's requests parts outside quarantine/, every request of the clean run exactly once;
- requests the engines answered beyond those stored (duplicates) at most what the faults that hit them had in
  flight (`bound`);
- every .parquet outside quarantine/ decodes;
- every second driver exited 3, and no two drivers' attempts overlap (manifest.json's attempts and
  attempt_history against the drivers the harness started);
- manifest.json's `rows` of each done cell equal to the rows in its predictions and errors parts.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Any

import chaos_world as world

from scripts.same_metrics import VARYING, differences

# Fields of metrics.json that differ from run to run (wall-clock times and what is computed from them); every
# other key must be equal to the clean run's.
TIME_FIELDS = frozenset(VARYING | {"seconds", "queries_per_s", "requests_per_s", "started_at", "finished_at",
                                   "wall_s", "busy_s", "start_s"})
_PART = re.compile(r"(?:^|/)(predictions|requests|errors)/benchmark=([^/]+)/model=([^/]+)/")
EXIT_BUSY = 3  # jobs.cli.run.RUN_ROOT_BUSY


def without_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k not in TIME_FIELDS and not k.endswith("_s")}
    if isinstance(value, list):
        return [without_times(v) for v in value]
    return value


def cell_of(key: str) -> str | None:
    """The manifest's cell key (benchmark/model) of a stored part's key."""
    found = _PART.search(key)
    return f"{found[2]}/{found[3]}" if found else None


def read_run(store: world.Store, prefix: str) -> dict[str, Any]:
    """Everything the checks read of a run: manifest.json, each cell's metrics, every part (decoded or why not)."""
    manifest = store.json(prefix + "manifest.json") or {}
    metrics, parts = {}, []
    for key in store.keys(prefix):
        relative = key.removeprefix(prefix)
        if relative.startswith("metrics/") and relative.endswith("/metrics.json"):
            bench, model = (p.split("=", 1)[1] for p in relative.split("/")[1:3])
            metrics[f"{bench}/{model}"] = json.loads(store.get(key))
        elif relative.endswith(".parquet"):
            data = store.get(key)
            found = _PART.search(relative)
            error = world.decodes(data)
            parts.append({"key": relative, "table": found[1] if found else None, "cell": cell_of(relative),
                          "quarantined": relative.startswith("quarantine/"), "error": error,
                          "ids": world.request_ids(data) if not error and found and found[1] == "requests" else [],
                          "rows": world.rows_in(data) if not error else 0})
    return {"manifest": manifest, "metrics": metrics, "parts": parts}


def stored_ids(stored: dict[str, Any]) -> dict[str, Counter]:
    """Per cell: how many times each request id is in its requests parts outside quarantine/."""
    out: dict[str, Counter] = {}
    for part in stored["parts"]:
        if part["table"] == "requests" and not part["quarantined"]:
            out.setdefault(part["cell"], Counter()).update(part["ids"])
    return out


def cells_done(stored: dict[str, Any], failures: list[str]) -> list[str]:
    cells = stored["manifest"].get("cells") or {}
    expected = {f"{b}/{m}" for b in world.BENCHMARKS for m in world.MODEL_NAMES}
    problems = [f"cell {key}: not in manifest.json" for key in sorted(expected - set(cells))]
    problems += [f"cell {key}: {cell.get('status')}, not done: {cell.get('message', '')}"
                 for key, cell in sorted(cells.items()) if cell.get("status") != "done"]
    problems += [f"a failure's reason is not one line: {line[:300]!r}" for line in failures
                 if "\n" in line or line.endswith(": ")]
    return problems


def same_metrics(stored: dict[str, Any], clean: dict[str, Any]) -> list[str]:
    problems = [f"metrics {key}: missing" for key in sorted(set(clean["metrics"]) - set(stored["metrics"]))]
    for key in sorted(set(clean["metrics"]) & set(stored["metrics"])):
        problems += [f"metrics {key}{d}" for d in differences(without_times(clean["metrics"][key]),
                                                              without_times(stored["metrics"][key]))]
    return problems


# A part damaged this close to its cell's end may have been damaged after the cell read its parts back for the
# last time (jobs/flow/rounds.py answer_rounds), the same as damage after the cell is done: nothing reads a done
# cell's requests again, so no run can see it (quick seed 2 on a quiet machine: corrupted while the manifest still
# said `running`, read back clean a moment before). Such a part is left out of the invariants, and said.
LATE_S = 5.0


def late_corruptions(chaos: Any, stored: dict[str, Any]) -> dict[str, int]:
    """Parts corrupted less than LATE_S before their cell finished (or after): part -> the rows it held."""
    cells = stored["manifest"].get("cells") or {}
    late = {}
    for fault in chaos.schedule:
        part = fault.detail.get("part") if fault.kind == "part_corrupt" and fault.fired_at_s is not None else None
        finished = (cells.get(cell_of(part)) or {}).get("finished_at") if part else None
        if finished is not None and float(finished) - float(fault.detail["at_unix"]) < LATE_S:
            late[part] = int(fault.detail["rows"])
    return late


def answered_once(stored: dict[str, Any], clean: dict[str, Any] | None,
                  excused: dict[str, int] | None = None) -> list[str]:
    """Each request id once in its cell's readable parts, and (given the clean run) every one of them there;
    `excused`: per cell, how many may be missing with a late-corrupted part (late_corruptions)."""
    problems = []
    for cell, ids in sorted(stored_ids(stored).items()):
        twice = sorted(i for i, n in ids.items() if n > 1)
        if twice:
            problems.append(f"requests {cell}: {len(twice)} request ids stored more than once (e.g. {twice[0]})")
        if clean is not None:
            expected = set(clean["ids"].get(cell, []))
            missing = expected - set(ids)
            if len(missing) > (excused or {}).get(cell, 0):
                problems.append(f"requests {cell}: {len(missing)} of {len(expected)} requests not stored")
            if extra := set(ids) - expected:
                problems.append(f"requests {cell}: {len(extra)} request ids the clean run has not")
    if clean is not None:
        problems += [f"requests {cell}: no part stored" for cell in sorted(set(clean["ids"]) - set(stored_ids(stored)))]
    return problems


def parts_decode(stored: dict[str, Any]) -> list[str]:
    return [f"part {p['key']}: unreadable outside quarantine/ ({p['error']})" for p in stored["parts"]
            if p["error"] and not p["quarantined"]]


def rows_match(stored: dict[str, Any]) -> list[str]:
    rows: dict[str, Counter] = {}
    for part in stored["parts"]:
        if part["table"] in ("predictions", "errors") and not part["quarantined"]:
            rows.setdefault(part["cell"], Counter())[part["table"]] += part["rows"]
    problems = []
    for key, cell in sorted((stored["manifest"].get("cells") or {}).items()):
        if cell.get("status") == "done":
            said = {t: int((cell.get("rows") or {}).get(t, 0)) for t in ("predictions", "errors")}
            found = {t: rows.get(key, Counter())[t] for t in ("predictions", "errors")}
            if said != found:
                problems.append(f"rows {key}: manifest.json says {said}, the parts hold {found}")
    return problems


def drivers_alone(chaos: Any, stored: dict[str, Any]) -> list[str]:
    problems = []
    mains = [d for d in chaos.drivers if d.role != "second"]
    for d in chaos.drivers:
        if d.role == "second" and d.process.returncode != EXIT_BUSY:
            problems.append(f"second driver pid {d.process.pid} exited {d.process.returncode}, not {EXIT_BUSY}: "
                            + " | ".join(d.tail(3)))
    manifest = stored["manifest"]
    # A driver killed before it took the lease (chaos seed 1 of the full sweep: SIGKILL half a second after its
    # start) records no attempt; one that ran to its end recorded one.
    finished = sum(d.process.returncode == 0 for d in mains)
    if not finished <= int(manifest.get("attempts", 0)) <= len(mains):
        problems.append(f"manifest.json counts {manifest.get('attempts')} attempts; the harness started "
                        f"{len(mains)} drivers that could take the lease, {finished} of them ran to the end")
    history = manifest.get("attempt_history") or []
    for earlier, later, entry in zip(mains, mains[1:], history[1:]):
        if earlier.ended is not None and float(entry["started_at"]) < earlier.ended - 0.5:
            problems.append(f"attempt {entry['attempt']} started {earlier.ended - float(entry['started_at']):.1f} s "
                            f"before the driver of the attempt before it ended")
    return problems


def in_flight(model: str) -> int:
    """Requests of `model` that may be out at an engine when a fault hits it, answered by it and not stored.
    The vLLM engine and the API judge cap what each cell has out, and every benchmark's cell of a model may be
    running at once (quick seed 3, under load: a SIGTERM left 20 of the API judge's answers unstored, more
    than one cell's 16)."""
    import ray

    cells = len(world.BENCHMARKS)
    if model == "tiny_classifier":
        from jobs.engines.vllm.engine import tasks_in_flight
        from jobs.loading import load_model

        config = load_model("tiny_classifier", "chaos")
        return cells * tasks_in_flight(config) * config.batch_size
    if model.startswith("tiny_tf"):  # Ray Data tasks of 0.25 CPU each, as many as the workers' CPUs take
        cpus = sum(n["Resources"].get("CPU", 0) for n in ray.nodes() if n["Alive"]) or 2 * world.WORKER_CPUS
        return math.ceil(cpus / 0.25) * (4 if model == "tiny_tf" else 2)
    return cells * 4 * 4  # the API judge: a cell's one actor, Ray Data's 4 tasks in flight to it, 4 requests each


def duplicates(chaos: Any, stored: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per model: requests its engines answered (the ledgers, or the API's 200s), those stored (distinct), the
    difference, and its bound."""
    ids = stored_ids(stored)
    out = {}
    for model in world.MODEL_NAMES:
        asked = (world.count_steps(chaos.api)["ok"] if model == "api_judge" else chaos.model_requests(model))
        kept = sum(len(c) for cell, c in ids.items() if cell.endswith(f"/{model}"))
        out[model] = {"asked": asked, "stored": kept, "duplicates": asked - kept, "bound": bound(chaos, model)}
    return out


def bound(chaos: Any, model: str) -> int:
    """The most requests of `model` the seed's faults may have had answered twice."""
    flight, total = in_flight(model), 0
    for fault in chaos.schedule:
        if fault.fired_at_s is None:
            continue
        if fault.kind in ("engine_kill", "engine_core_kill") and model in fault.detail.get("model", "") or fault.kind in ("node_remove", "driver_term"):
            total += flight
        elif fault.kind == "driver_kill":  # every running cell's answers not yet in a part, and those in flight
            total += len(world.BENCHMARKS) * world.FLUSH_EVERY + flight
        elif fault.kind == "part_corrupt" and f"model={model}/" in fault.detail.get("part", ""):
            total += fault.detail["rows"]
    total += len(chaos.failures) * (len(world.BENCHMARKS) * world.FLUSH_EVERY + flight)  # a failed cell's rerun
    return total


def duplicates_bounded(counted: dict[str, dict[str, int]]) -> list[str]:
    return [f"duplicates {model}: {c['duplicates']} requests answered and not stored, more than the faults' bound "
            f"{c['bound']} ({c['asked']} asked, {c['stored']} stored)"
            for model, c in counted.items() if c["duplicates"] > c["bound"]]


def problems(chaos: Any, stored: dict[str, Any], clean: dict[str, Any]) -> list[str]:
    late = late_corruptions(chaos, stored)
    excused = Counter({cell_of(part): rows for part, rows in late.items()})
    seen = {**stored, "parts": [p for p in stored["parts"] if p["key"] not in late]}
    return ([chaos.stalled] if chaos.stalled else []) + (cells_done(stored, chaos.failures) + same_metrics(stored, clean) + answered_once(seen, clean, excused)
            + duplicates_bounded(duplicates(chaos, stored)) + parts_decode(seen) + drivers_alone(chaos, stored)
            + rows_match(stored))


def clean_problems(chaos: Any, stored: dict[str, Any]) -> list[str]:
    """The clean run's own checks; it also records each cell's request ids for the seeds."""
    return (cells_done(stored, chaos.failures) + answered_once(stored, None) + parts_decode(stored)
            + rows_match(stored))
