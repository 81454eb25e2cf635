"""A Hugging Face cache built by hand in a test's folder, laid out as huggingface_hub writes it, with the process
pointed at it and offline: hub lookups in tests read only this folder, and nothing is ever downloaded.

    <cache>/datasets--owner--name/blobs/<sha256>                 file contents
    <cache>/datasets--owner--name/snapshots/<commit>/<path>      symlinks to the blobs
    <cache>/datasets--owner--name/refs/<revision>                the commit a branch or tag points at
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest


def offline_hub_cache(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache under `folder`, set as HF_HUB_CACHE with HF_HUB_OFFLINE=1 for the test."""
    from huggingface_hub import constants

    cache = folder / "hf-cache"
    cache.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub reads both variables once, when it is first imported: its constants follow them here.
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def cache_repo(cache: Path, repo_id: str, files: dict[str, bytes], repo_type: str = "dataset",
               revision: str = "main") -> Path:
    """A cached snapshot of `repo_id` holding `files` (path in repo -> bytes) at `revision`; its folder."""
    owner, name = repo_id.split("/")
    repo = cache / f"{repo_type}s--{owner}--{name}"
    commit = hashlib.sha1(repr(sorted(files.items())).encode()).hexdigest()
    snapshot = repo / "snapshots" / commit
    for path, content in files.items():
        blob = repo / "blobs" / hashlib.sha256(content).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(content)
        link = snapshot / path
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():  # the same files again: the same commit, under another ref
            link.symlink_to(Path(*[".."] * (len(Path(path).parts) + 1), "blobs", blob.name))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / revision).write_text(commit)
    return snapshot
