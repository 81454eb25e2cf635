"""The run root's storage backends (jobs.store.backends) and layout (jobs.store.layout): the URI's scheme picks
the backend in one place, an unknown one is refused naming the URI, a backend registered under a new scheme
serves a RunRoot unchanged, and create-if-absent creates once, whole, behind the write fence."""
from __future__ import annotations

import os
import pickle

import pytest

from jobs.store import backends
from jobs.store.backends import Backend, LocalBackend, S3Backend, backend_for, register
from jobs.store.layout import cell_folder, flat_value, metrics_path, part_path, strategy_path
from jobs.store.run_root import RunRoot


def test_the_scheme_picks_the_backend(tmp_path):
    for uri in (str(tmp_path), f"file://{tmp_path}", "relative/folder"):
        root = RunRoot(uri, "run")
        assert type(root.backend) is LocalBackend and root.uri("") == os.path.abspath(uri.removeprefix("file://")
                                                                                      ) + "/run"
    s3 = RunRoot("s3://bucket/prefix/", "run", endpoint_url="http://127.0.0.1:1")  # no request is made yet
    assert type(s3.backend) is S3Backend and s3.uri("a.json") == "s3://bucket/prefix/run/a.json"
    assert s3.path("a.json") == "bucket/prefix/run/a.json"  # bucket/key on its filesystem
    copy = pickle.loads(pickle.dumps(s3))
    assert type(copy.backend) is S3Backend and copy.uri("") == s3.uri("")
    assert RunRoot("/", "run").path("x") == "/run/x"  # the filesystem's root joins without a double slash


def test_an_unknown_scheme_or_a_bucketless_s3_uri_is_refused_naming_the_uri():
    with pytest.raises(ValueError, match=r"'gs://bucket/runs': no storage backend for gs://.*s3://"):
        RunRoot("gs://bucket/runs", "run")
    with pytest.raises(ValueError, match=r"'S3://bucket': no storage backend for S3://"):
        backend_for("S3://bucket")
    with pytest.raises(ValueError, match=r"'s3:///': an S3 run root needs a bucket"):
        RunRoot("s3:///", "run")


def test_a_backend_registered_under_a_new_scheme_serves_a_run_root(tmp_path, monkeypatch):
    """What a newcomer adding a store writes: one class, one registration; RunRoot is untouched."""
    monkeypatch.setattr(backends, "_BACKENDS", dict(backends._BACKENDS))  # the registration ends with the test

    @register("mirror")
    class Mirror(LocalBackend):
        uri_prefix = "mirror://"

    root = RunRoot(f"mirror://{tmp_path}/results", "run")
    assert type(root.backend) is Mirror and root.uri("m.json") == f"mirror://{tmp_path}/results/run/m.json"
    root.write_json("m.json", {"a": 1})
    assert (tmp_path / "results/run/m.json").read_text() == '{\n  "a": 1\n}\n'
    root.write_rows("requests", "b", "org/m", [{"x": 1}], part="0")
    assert root.list_parts("requests", "b", "org/m") == ["0"]
    assert pickle.loads(pickle.dumps(root)).backend.__class__ is Mirror
    with pytest.raises(TypeError, match="abstract"):  # a backend must say how it puts, gets and creates
        register("half")(type("Half", (Backend,), {}))("x", None)


def test_create_stores_a_file_once_and_never_replaces_it(root):
    assert root.create("lease.json", b"first") is True
    assert root.create("lease.json", b"second") is False
    assert root.read_bytes("lease.json") == b"first"
    root.delete("lease.json")
    assert root.create("lease.json", b"third") is True and root.read_bytes("lease.json") == b"third"
    if isinstance(root.backend, LocalBackend):  # the hard link's temporary files are gone
        assert sorted(os.listdir(root.path(""))) == ["lease.json"]


def test_create_passes_the_write_fence(tmp_path):
    class Fenced(Exception):
        pass

    def refuse() -> None:
        raise Fenced

    root = RunRoot(str(tmp_path), "run", before_write=refuse)
    with pytest.raises(Fenced):
        root.create("lease.json", b"x")
    assert not os.path.exists(tmp_path / "run")


def test_the_layout_is_spelled_in_one_place(tmp_path):
    assert cell_folder("runs", "b", "org/m") == "runs/benchmark=b/model=org%2Fm"
    assert cell_folder("runs", "b", "org/m", flat_value) == "runs/benchmark=b/model=org__m"  # an older run's
    assert part_path("requests", "b", "m", "0001") == "requests/benchmark=b/model=m/part-0001.parquet"
    assert metrics_path("b", "org/m") == "metrics/benchmark=b/model=org%2Fm/metrics.json"
    assert strategy_path("metrics", "b", "m", "a b", "metrics.json") == (
        "metrics/benchmark=b/model=m/strategy=a%20b/metrics.json")
    with pytest.raises(ValueError, match="runs/ or metrics/"):
        strategy_path("predictions", "b", "m", "s", "run.jsonl")
    with pytest.raises(ValueError, match="table must be one of"):
        RunRoot(str(tmp_path), "run").partition("runs", "b", "m")
    root = RunRoot(str(tmp_path), "run")
    for name in ("strategy=x/run.jsonl", "strategy=y/run.jsonl", "notes.json", "other/keep.json"):
        root.write_text(f"runs/benchmark=b/model=m/{name}", "kept")
    root.clear_strategies("runs", "b", "m")
    assert sorted(os.listdir(tmp_path / "run/runs/benchmark=b/model=m")) == ["notes.json", "other"]
