"""A local model folder is known by its weight files' bytes (jobs.engines.weights.folder_hash), so a checkpoint
retrained in place is asked again; each file's hash is remembered across processes, so an unchanged folder is
read once, not on every sweep; a Hub snapshot's links name their blobs, which are read not at all."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hub_cache import cache_repo

from jobs.config import ModelConfig
from jobs.engines import weights
from jobs.engines.identity import model_identity
from jobs.engines.weights import HASHES, folder_hash

HOUR_AGO_NS = time.time_ns() - 3600 * 10**9  # long settled: a file this old is remembered


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    """The ragjudge cache, where the remembered hashes live, in the test's own folder."""
    monkeypatch.setenv("RAGJUDGE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The weight files read, by name, however many folder_hash calls read them."""
    read, names = weights._file_hash, []

    def counted(path: Path) -> str:
        names.append(path.name)
        return read(path)

    monkeypatch.setattr(weights, "_file_hash", counted)
    return names


def _folder(where: Path, *files: bytes) -> Path:
    where.mkdir()
    (where / "config.json").write_text('{"hidden_size": 8}')
    for i, content in enumerate(files):
        path = where / f"model-{i}.safetensors"
        path.write_bytes(content)
        os.utime(path, ns=(HOUR_AGO_NS, HOUR_AGO_NS))
    return where


def _rm(folder: Path) -> ModelConfig:
    return ModelConfig(name="rm", path=str(folder), kind="discriminative", engine="transformers")


def test_folders_with_the_same_names_and_sizes_but_other_weight_bytes_are_other_models(tmp_path):
    one, other, copy = (_folder(tmp_path / name, content) for name, content in
                        (("one", b"x" * 100), ("other", b"y" * 100), ("copy", b"x" * 100)))
    assert folder_hash(one) != folder_hash(other)
    assert model_identity(_rm(one)) != model_identity(_rm(other))
    assert model_identity(_rm(one)) == model_identity(_rm(copy))  # the same bytes elsewhere: the same model


def test_weights_rewritten_in_place_or_replaced_at_the_same_size_and_mtime_are_asked_again(tmp_path):
    folder = _folder(tmp_path / "rm", b"x" * 100)
    path, first = folder / "model-0.safetensors", model_identity(_rm(folder))
    path.write_bytes(b"y" * 100)  # retrained in place: the same file, size and inode, a new mtime
    os.utime(path, ns=(HOUR_AGO_NS + 1, HOUR_AGO_NS + 1))  # settled, so its hash is remembered
    rewritten = model_identity(_rm(folder))
    assert rewritten != first
    new = tmp_path / "new.safetensors"  # re-exported beside it and moved over it, its times forced to the old
    new.write_bytes(b"z" * 100)
    os.utime(new, ns=(HOUR_AGO_NS + 1, HOUR_AGO_NS + 1))
    os.replace(new, path)
    assert path.stat().st_size == 100 and path.stat().st_mtime_ns == HOUR_AGO_NS + 1
    assert model_identity(_rm(folder)) not in (first, rewritten)  # only its inode differs: read again


def test_an_unchanged_folder_is_read_once_across_sweeps_and_a_bad_cache_only_costs_a_read(tmp_path, cache, reads):
    folder = _folder(tmp_path / "rm", b"a" * 1000, b"b" * 1000)
    first = folder_hash(folder)  # the first sweep reads both files
    assert sorted(reads) == ["model-0.safetensors", "model-1.safetensors"] and (cache / HASHES).is_file()
    assert folder_hash(folder) == first and len(reads) == 2  # the next sweep: nothing held in memory, nothing read
    for bad in ("{not json", '["a list"]', '{"/x": 3}'):
        (cache / HASHES).write_text(bad)
        reads.clear()
        assert folder_hash(folder) == first and len(reads) == 2  # treated as empty: read again, no error
    reads.clear()
    (folder / "model-1.safetensors").write_bytes(b"c" * 1000)
    assert folder_hash(folder) != first and reads == ["model-1.safetensors"]  # only the changed file


def test_a_file_written_moments_ago_is_not_remembered(tmp_path, reads):
    """Its mtime may not move on a rewrite within the filesystem's clock tick (git's racy index)."""
    folder = _folder(tmp_path / "rm")
    (folder / "model.safetensors").write_bytes(b"x" * 100)
    folder_hash(folder)
    folder_hash(folder)
    assert reads == ["model.safetensors"] * 2


def test_a_hub_snapshot_folder_is_known_by_its_blob_names_without_reading_them(tmp_path, reads):
    hub = tmp_path / "hub"
    one = cache_repo(hub, "org/rm", {"config.json": b"{}", "model.safetensors": b"x" * 100}, repo_type="model")
    other = cache_repo(hub, "org/rm2", {"config.json": b"{}", "model.safetensors": b"y" * 100}, repo_type="model")
    assert folder_hash(one) != folder_hash(other) and reads == []
