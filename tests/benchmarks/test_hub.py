"""hf:// data paths (benchmarks.hub) read from a Hugging Face cache built by hand, offline: no test downloads."""
from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hub_cache import cache_repo, offline_hub_cache

from benchmarks import hub
from benchmarks.rag_rewardbench import load_items

REPO = "jinzhuoran/RAG-RewardBench"


def _pairs(subset: str, n: int) -> list[dict[str, str]]:
    """Rows with the released dataset's fields (split train)."""
    return [{"prompt": f"References ...\nQuestion {i}?", "question": f"Question {i}?", "chosen": f"good {i}",
             "reject": f"bad {i}", "chosen_model": "gpt-4o", "reject_model": "llama", "subset": subset}
            for i in range(n)]


def _jsonl(rows: list[dict[str, str]]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def _parquet(rows: list[dict[str, str]]) -> bytes:
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), out)
    return out.getvalue()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    return offline_hub_cache(tmp_path, monkeypatch)


def test_a_cached_dataset_is_read_offline_by_the_benchmarks_loader(cache):
    snapshot = cache_repo(cache, REPO, {"helpful.jsonl": _jsonl(_pairs("helpful-a", 3)),
                                        "data/abstain.jsonl": _jsonl(_pairs("abstain-b", 2)),
                                        "README.md": b"# card\n"})
    folder = hub.local_path(f"hf://datasets/{REPO}")
    assert folder == str(snapshot)
    items = list(load_items(folder))
    assert sorted(i["subset"] for i in items) == ["abstain-b"] * 2 + ["helpful-a"] * 3
    assert all(i["error"] is None and i["chosen_model"] == "gpt-4o" for i in items)


def test_a_parquet_only_repository_a_file_inside_it_and_a_revision(cache):
    cache_repo(cache, "owner/parquet-only", {"data/train-00000-of-00001.parquet": _parquet(_pairs("cite-x", 4))},
               revision="v1.0")
    url = "hf://datasets/owner/parquet-only@v1.0/data/train-00000-of-00001.parquet"
    path = hub.local_path(url)
    assert path.endswith("/data/train-00000-of-00001.parquet")
    assert [i["prompt"] for i in load_items(path)] == [f"References ...\nQuestion {i}?" for i in range(4)]
    # the folder holding it, too; main was never cached, so without @v1.0 it is missing
    assert len(list(load_items(hub.local_path("hf://datasets/owner/parquet-only@v1.0/data")))) == 4
    with pytest.raises(hub.HubDataMissing, match="owner/parquet-only is not in the Hugging Face cache"):
        hub.local_path("hf://datasets/owner/parquet-only/data")


def test_a_missing_dataset_offline_names_it_and_says_what_to_do(cache):
    with pytest.raises(hub.HubDataMissing) as missing:
        hub.local_path(f"hf://datasets/{REPO}")
    message = str(missing.value)
    assert message.startswith(f"hf://datasets/{REPO}: the dataset {REPO} is not in the Hugging Face cache ({cache})")
    assert "HF_HUB_OFFLINE=1 forbids fetching it" in message
    assert "run once online to cache it, or set HF_HUB_CACHE" in message
    assert isinstance(missing.value, FileNotFoundError)  # the CLI prints it as one line


def test_a_file_the_cached_snapshot_lacks_is_missing_too(cache):
    cache_repo(cache, REPO, {"helpful.jsonl": _jsonl(_pairs("helpful-a", 1))})
    with pytest.raises(hub.HubDataMissing, match=f"the dataset {REPO} is not in the Hugging Face cache"):
        hub.local_path(f"hf://datasets/{REPO}/conflict.jsonl")


def test_without_fetching_only_the_cache_is_read_even_online(cache, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # online, but fetch=False never asks the Hub
    with pytest.raises(hub.HubDataMissing, match="this command does not fetch"):
        hub.local_path(f"hf://datasets/{REPO}", fetch=False)
    snapshot = cache_repo(cache, REPO, {"helpful.jsonl": _jsonl(_pairs("helpful-a", 1))})
    assert hub.local_path(f"hf://datasets/{REPO}", fetch=False) == str(snapshot)


def test_local_paths_pass_through_and_bad_urls_are_named():
    assert hub.local_path("data/x.jsonl") == "data/x.jsonl"
    assert hub.local_path("s3://bucket/x.jsonl") == "s3://bucket/x.jsonl"
    with pytest.raises(ValueError, match="Repository id must be 'namespace/name'"):
        hub.check_url("hf://datasets/squad")
    with pytest.raises(ValueError, match="a bucket is not a repository"):
        hub.check_url("hf://buckets/owner/name/file.jsonl")
    hub.check_url("hf://datasets/owner/name@refs/convert/parquet/default/train")


def test_cached_snapshot_of_a_model(cache):
    assert hub.cached_snapshot("org/model") is None
    snapshot = cache_repo(cache, "org/model", {"config.json": b"{}"}, repo_type="model")
    assert hub.cached_snapshot("org/model") == str(snapshot)
    assert hub.cached_snapshot("org/model", revision="v2") is None
    assert hub.cached_snapshot("not a repo id") is None
