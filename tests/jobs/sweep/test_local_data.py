"""A sweep's hf:// data is read from the Hugging Face cache before its cells start (jobs.sweep.pipeline.local_data):
every benchmark gets it, the manifest records the copy read, and a dataset that cannot be had fails only the
cells of its benchmark, with the message that names it."""
from __future__ import annotations

from hub_cache import cache_repo, offline_hub_cache
from sweeps import SAMPLE

from jobs.config import BenchmarkConfig, ModelConfig, StorageConfig, SweepConfig
from jobs.store.manifest import Manifest
from jobs.store.run_root import RunRoot
from jobs.sweep.cell import answers_hash
from jobs.sweep.pipeline import local_data


def _sweep(tmp_path, **data: list[str]) -> SweepConfig:
    return SweepConfig(name="s", storage=StorageConfig(root=str(tmp_path / "results"), run="r"),
                       benchmarks={name: BenchmarkConfig(name=name, module="rag_rewardbench", data=paths)
                                   for name, paths in data.items()})


def test_hub_paths_become_their_cached_copies_and_the_manifest_names_them(tmp_path, monkeypatch):
    cache = offline_hub_cache(tmp_path, monkeypatch)
    snapshot = cache_repo(cache, "owner/pairs", {"data/pairs.jsonl": SAMPLE.read_bytes()})
    sweep = _sweep(tmp_path, pairs=["hf://datasets/owner/pairs", str(SAMPLE)], more=["hf://datasets/owner/gone"])
    manifest = Manifest(RunRoot(sweep.storage.root, "r"), sweep)
    benchmarks, problems = local_data(sweep, manifest)
    assert benchmarks["pairs"].data == [str(snapshot), str(SAMPLE)] and problems["pairs"] == []
    assert sweep.benchmarks["pairs"].data[0] == "hf://datasets/owner/pairs"  # the sweep itself is unchanged
    assert problems["more"] == [f"hf://datasets/owner/gone: the dataset owner/gone is not in the Hugging Face "
                                f"cache ({cache}) and HF_HUB_OFFLINE=1 forbids fetching it: run once online to "
                                "cache it, or set HF_HUB_CACHE to a cache that holds it"]
    stored = RunRoot(sweep.storage.root, "r").read_json("manifest.json")
    assert stored["data_sources"] == {"hf://datasets/owner/pairs": str(snapshot)}
    assert stored["config"]["benchmarks"]["pairs"]["data"][0] == "hf://datasets/owner/pairs"
    # The cell hashes the bytes it reads: a new commit of the dataset is new data.
    model = ModelConfig(name="m", path="p", kind="implicit")
    before = answers_hash(benchmarks["pairs"], model)
    cache_repo(cache, "owner/pairs", {"data/pairs.jsonl": SAMPLE.read_bytes() + SAMPLE.read_bytes()[:200]})
    assert answers_hash(local_data(sweep, manifest)[0]["pairs"], model) != before
