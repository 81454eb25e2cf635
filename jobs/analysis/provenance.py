"""Which cells' answers came from attempts run under different code or package versions: a resume after a
vLLM upgrade, or from another checkout, mixes answers of both, and the report says so beside those cells."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _produced_by(attempt: Mapping[str, Any]) -> dict[str, Any]:
    return {"git sha": attempt.get("git_sha"), **(attempt.get("versions") or {})}


def mixed_versions(manifest: Mapping[str, Any]) -> dict[str, str]:
    """Cell key -> what differs between the attempts that wrote it ("vllm 0.11.0 (attempt 1) vs 0.12.0 (attempt
    2)"), for the cells written by attempts whose versions or git sha differ; {} for every other run."""
    history = {a["attempt"]: _produced_by(a) for a in manifest.get("attempt_history") or []}
    out = {}
    for key, cell in sorted((manifest.get("cells") or {}).items()):
        attempts = [a for a in cell.get("attempts") or [] if a in history]
        changes = []
        for name in dict.fromkeys(k for a in attempts for k in history[a]):
            first: dict[Any, int] = {}  # each value of `name`, with the first attempt that had it
            for a in attempts:
                first.setdefault(history[a].get(name), a)
            if len(first) > 1:
                changes.append(f"{name} " + " vs ".join(f"{v} (attempt {a})" for v, a in first.items()))
        if changes:
            out[key] = "; ".join(changes)
    return out
