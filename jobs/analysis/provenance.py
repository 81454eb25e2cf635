"""What produced a run's numbers (issue 29, item 5): per model, the weights its engine loaded (a hub commit, a local
folder's hash, an API model's name and host: manifest.json's `weights`), its engine and dtype, and the versions
of the attempts that wrote its cells; and which cells' answers came from attempts run under different code or
package versions: a resume after a vLLM upgrade, or from another checkout, mixes answers of both, and the report
says so beside those cells."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmarks.boundary_types import JsonObject

PROVENANCE_COLUMNS = ("model", "engine", "dtype", "weights", "attempts", "versions")


def _produced_by(attempt: Mapping[str, Any]) -> JsonObject:
    return {"git sha": attempt.get("git_sha"), **(attempt.get("versions") or {})}


def _values(manifest: Mapping[str, Any], attempts: list[int]) -> dict[str, dict[Any, int]]:
    """Per field of the attempts' versions (git sha first), each value it had with the first attempt that had it;
    attempts missing from attempt_history (a run from before it) are left out."""
    history = {a["attempt"]: _produced_by(a) for a in manifest.get("attempt_history") or []}
    known = [a for a in attempts if a in history]
    values: dict[str, dict[Any, int]] = {}
    for name in dict.fromkeys(k for a in known for k in history[a]):
        for a in known:
            values.setdefault(name, {}).setdefault(history[a].get(name), a)
    return values


def _said(values: dict[Any, int]) -> str:
    """One value as it is; several as "a (attempt 1) vs b (attempt 2)"."""
    if len(values) == 1:
        return str(next(iter(values)))
    return " vs ".join(f"{v} (attempt {a})" for v, a in values.items())


def mixed_versions(manifest: Mapping[str, Any]) -> dict[str, str]:
    """Cell key -> what differs between the attempts that wrote it ("vllm 0.11.0 (attempt 1) vs 0.12.0 (attempt
    2)"), for the cells written by attempts whose versions or git sha differ; {} for every other run."""
    out = {}
    for key, cell in sorted((manifest.get("cells") or {}).items()):
        changes = [f"{name} {_said(v)}" for name, v in _values(manifest, cell.get("attempts") or []).items()
                   if len(v) > 1]
        if changes:
            out[key] = "; ".join(changes)
    return out


def _weights_text(record: Mapping[str, Any] | None) -> str:
    """manifest.json's record of what a model's engine loaded, in a few words ("-" for a run from before it)."""
    if not record:
        return "-"
    if "api_host" in record:
        return f"API model {record.get('model')} at {record.get('api_host') or '?'}"
    parts = []
    for key in ("path", "reference", "tokenizer"):
        entry = record.get(key)
        if not entry:
            continue
        if "hub" in entry:
            parts.append(f"{key} {entry['hub']}@{entry['commit'] or '(not in the cache)'}")
        else:
            source, spec = next((k, v) for k, v in entry.items() if k != "hash")
            parts.append(f"{key} {spec} ({source}, hash {entry.get('hash') or '-'})")
    return "; ".join(parts) or "-"


def model_provenance(manifest: Mapping[str, Any]) -> list[list[str]]:
    """Per model with cells, what produced its numbers, as table rows with PROVENANCE_COLUMNS (header first):
    engine, dtype, the weights it loaded, the attempts that wrote its cells and their versions (a field whose
    attempts differ says each value with its attempt); [] without cells."""
    cells = manifest.get("cells") or {}
    models = (manifest.get("config") or {}).get("models") or {}
    weights = manifest.get("weights") or {}
    attempts: dict[str, set[int]] = {}
    for key, cell in cells.items():
        attempts.setdefault(key.partition("/")[2], set()).update(cell.get("attempts") or [])
    rows = [list(PROVENANCE_COLUMNS)]
    for model in sorted(attempts):
        config = models.get(model) or {}
        record = weights.get(model) or {}
        versions = _values(manifest, sorted(attempts[model]))
        rows.append([model, str(record.get("engine") or config.get("engine") or "-"),
                     str(record.get("dtype") or config.get("dtype") or "-"), _weights_text(record),
                     ", ".join(map(str, sorted(attempts[model]))) or "-",
                     "; ".join(f"{name} {_said(v)}" for name, v in versions.items()) or "-"])
    return rows if len(rows) > 1 else []
