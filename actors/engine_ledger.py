"""What each long-lived engine of a sweep did: starts (and the node of each), start time, busy time, requests
and tokens; and what each API model was asked: requests, HTTP calls, retries by cause and the tokens its
replies counted.

Engines report here themselves (a start from their constructor, a batch's counts after each batch), so a
restarted engine is counted even though Ray rebuilt it without the driver's knowledge, on whichever node Ray
chose. One small actor per sweep, on the driver's node, holds the ledger; the driver reads it into manifest.json.
An API model's requests come back to the driver with their counts (RequestUsage), and the driver's own ledger
adds them up (jobs.engines.host).
"""
from __future__ import annotations

from typing import Any, TypedDict

from benchmarks.boundary_types import JsonObject

COUNTERS = ("busy_s", "requests", "prompt_tokens", "cached_prompt_tokens", "generated_tokens", "thinking_tokens")
TOKENS = ("prompt_tokens", "cached_prompt_tokens", "generated_tokens", "thinking_tokens")
USAGE_KEYS = ("tries", *TOKENS)  # a RequestUsage's
MODELS_JOINED_BY = " + "  # an entry's "model": the model files a shared engine served


class EngineEntry(TypedDict, total=False):
    """One engine in manifest.json's `engines`: what the ledger counts, and what the host adds (host.py)."""

    model: str  # every model file the engine started or answered for, sorted and joined by MODELS_JOINED_BY
    engine: str
    starts: int
    start_s: float  # summed over its starts
    nodes: list[dict[str, str]]  # per start in order, the node it ran on ({"node_id", "ip"})
    start_times: list[dict[str, float]]  # per start in order, when its load began and when it was ready (Unix s)
    numerics: list[JsonObject]  # per start in order, what it computes with (actors.hardware.numerics; {}: unsaid)
    busy_s: float
    requests: int
    prompt_tokens: int
    cached_prompt_tokens: int
    generated_tokens: int
    thinking_tokens: int  # of the generated, those a thinking judge's traces took (where its engine counts them)
    requested_at: float  # the host: when it asked Ray for the actor ...
    released_at: float  # ... and when it killed it
    lost_nodes: list[str]  # the host: nodes it ran on that have died since (Ray restarted it elsewhere)
    http_calls: int  # an API model's: the HTTP requests sent, each retry one more
    retries: dict[str, int]  # an API model's: the tries asked again, by what they met (RequestUsage.tries)
    dollars: float | None  # an API model's, at list price (conf/prices.yaml); None: the table has no price for it


class RequestUsage(TypedDict):
    """One API request as its worker counted it: what each of its HTTP calls met, in order ('timeout',
    'connection failed', 'HTTP 500', 'malformed reply', 'HTTP 200'; each but the last was asked again for
    what it met), and the tokens its replies' usage counted (generated: the provider's completion tokens;
    thinking: the reasoning tokens among them)."""

    tries: list[str]
    prompt_tokens: int
    cached_prompt_tokens: int
    generated_tokens: int
    thinking_tokens: int


class EngineLedger:
    """Per engine key, an EngineEntry: the start times let a run's engines be laid on one time line (how many
    were alive at once)."""

    def __init__(self) -> None:
        self.entries: dict[str, EngineEntry] = {}
        self.models: dict[str, set[str]] = {}

    def _entry(self, key: str, model: str, engine: str) -> EngineEntry:
        self.models.setdefault(key, set()).add(model)
        return self.entries.setdefault(key, {"engine": engine, "starts": 0, "start_s": 0.0, "nodes": [],
                                             "start_times": [], "numerics": [], **{name: 0 for name in COUNTERS}})

    def started(self, key: str, model: str, engine: str, seconds: float, node: dict[str, str] | None = None,
                began: float | None = None, numerics: JsonObject | None = None) -> None:
        entry = self._entry(key, model, engine)
        entry["numerics"].append(numerics or {})
        entry["starts"] += 1
        entry["start_s"] = round(entry["start_s"] + seconds, 3)
        entry["nodes"].append(node or {})
        entry["start_times"].append({"began": round(began, 3), "ready": round(began + seconds, 3)}
                                    if began is not None else {})

    def add(self, key: str, model: str, engine: str, counts: dict[str, float]) -> None:
        entry = self._entry(key, model, engine)
        for name in COUNTERS:
            entry[name] += counts.get(name, 0)
        entry["busy_s"] = round(entry["busy_s"], 3)

    def asked(self, key: str, model: str, engine: str, usage: RequestUsage) -> None:
        """One request of an API model: a request, its HTTP calls, its retries by cause and its tokens."""
        self.models.setdefault(key, set()).add(model)
        entry = self.entries.setdefault(key, {"engine": engine, "requests": 0, "http_calls": 0, "retries": {},
                                              **{name: 0 for name in TOKENS}})
        entry["requests"] += 1
        entry["http_calls"] += len(usage["tries"])
        for cause in usage["tries"][:-1]:
            entry["retries"][cause] = entry["retries"].get(cause, 0) + 1
        for name in TOKENS:
            entry[name] += int(usage[name])

    def read(self) -> dict[str, EngineEntry]:
        return {key: {"model": MODELS_JOINED_BY.join(sorted(self.models[key])), **entry}
                for key, entry in self.entries.items()}


def this_node() -> dict[str, str]:
    """The Ray node this process runs on, as the ledger records an engine's start."""
    import ray

    context = ray.get_runtime_context()
    return {"node_id": context.get_node_id(), "ip": ray.util.get_node_ip_address()}


def report(ledger: str | None, method: str, *args: Any) -> None:
    """Send one record to the sweep's ledger actor (by name); nothing without one (an engine used alone)."""
    if ledger is None:
        return
    import ray

    getattr(ray.get_actor(ledger), method).remote(*args)
