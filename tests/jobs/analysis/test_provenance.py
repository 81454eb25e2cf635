"""Provenance per attempt (issue 29, item 5): every attempt's versions, git sha, host and GPUs are kept, each
cell lists the attempts that wrote it, and a cell written under two sets of versions is named."""
from __future__ import annotations

from jobs.analysis import write_report
from jobs.analysis.provenance import mixed_versions, model_provenance
from jobs.config import StorageConfig, SweepConfig
from jobs.store.manifest import Manifest
from jobs.store.run_root import RunRoot
from scripts.synthetic_run import build_run


def test_each_attempt_is_recorded_and_a_cell_lists_the_attempts_that_wrote_it(tmp_path, monkeypatch):
    root = RunRoot(str(tmp_path), "run")
    sweep = SweepConfig(name="s", storage=StorageConfig(run="run"))
    first = Manifest(root, sweep)
    first.set_cell("b/m", {"status": "running"})
    first.set_cell("b/done_first", {"status": "done"})
    monkeypatch.setattr("jobs.store.manifest.versions", lambda: {"python": "3.11.9", "vllm": "0.12.0"})
    second = Manifest(root, sweep)  # a resume, after an upgrade
    second.set_cell("b/m", {"status": "done"})
    data = root.read_json("manifest.json")
    assert [a["attempt"] for a in data["attempt_history"]] == [1, 2]
    assert data["attempt_history"][1]["versions"] == {"python": "3.11.9", "vllm": "0.12.0"}
    assert all(a["host"] and isinstance(a["gpus"], list) for a in data["attempt_history"])
    assert data["cells"]["b/m"]["attempts"] == [1, 2] and data["cells"]["b/done_first"]["attempts"] == [1]


def test_a_cell_written_under_two_versions_is_named_with_what_changed():
    manifest = {"attempt_history": [
        {"attempt": 1, "git_sha": "aaa", "versions": {"vllm": "0.11.0", "torch": "2.8.0"}},
        {"attempt": 2, "git_sha": "aaa", "versions": {"vllm": "0.11.0", "torch": "2.8.0"}},
        {"attempt": 3, "git_sha": "bbb", "versions": {"vllm": "0.12.0", "torch": "2.8.0"}}],
        "cells": {"b/mixed": {"attempts": [2, 3]}, "b/same": {"attempts": [1, 2]}, "b/late": {"attempts": [3]},
                  "b/old": {}}}
    assert mixed_versions(manifest) == {
        "b/mixed": "git sha aaa (attempt 2) vs bbb (attempt 3); vllm 0.11.0 (attempt 2) vs 0.12.0 (attempt 3)"}
    assert mixed_versions({"cells": {"b/m": {"status": "done"}}}) == {}  # a run from before attempt_history


def test_the_report_names_a_cell_answered_under_two_versions(tmp_path):
    root = build_run(str(tmp_path), "run", models=2, items=12)
    manifest = root.read_json("manifest.json")
    manifest["attempt_history"] = [{"attempt": 1, "git_sha": "aaa", "versions": {"vllm": "0.11.0"}},
                                   {"attempt": 2, "git_sha": "aaa", "versions": {"vllm": "0.12.0"}}]
    manifest["cells"]["rag_rewardbench/synthetic-rm-01"]["attempts"] = [1, 2]
    root.write_json("manifest.json", manifest)
    lines: list[str] = []
    write_report(root, out=lines.append)
    assert lines[-1] == ("Cells answered by attempts of different versions (a resume after an upgrade: their "
                         "answers mix both)\n  rag_rewardbench/synthetic-rm-01: vllm 0.11.0 (attempt 1) vs 0.12.0 "
                         "(attempt 2)\n")


MANIFEST = {
    "attempt_history": [{"attempt": 1, "git_sha": "aaa", "versions": {"vllm": "0.11.0", "torch": "2.8.0"}},
                        {"attempt": 2, "git_sha": "aaa", "versions": {"vllm": "0.12.0", "torch": "2.8.0"}}],
    "config": {"models": {"rm": {"engine": "vllm", "dtype": "bfloat16"}, "old": {"engine": "transformers"}}},
    "weights": {
        "rm": {"engine": "vllm", "dtype": "bfloat16", "path": {"hub": "org/rm", "commit": "c" * 40},
               "tokenizer": {"hub": "org/tok", "commit": None}},
        "tiny": {"engine": "transformers", "dtype": "float32",
                 "path": {"built-in": "builtin:tiny-random-classifier", "hash": "0123456789ab"}},
        "judge": {"engine": "http", "model": "gpt-4o", "api_host": "api.example.com"}},
    "cells": {"b/rm": {"attempts": [1, 2]}, "c/rm": {"attempts": [2]}, "b/tiny": {"attempts": [2]},
              "b/judge": {"attempts": [1]}, "b/old": {"attempts": [1]}}}


def test_each_models_numbers_name_their_weights_engine_dtype_and_the_versions_that_wrote_them():
    rows = model_provenance(MANIFEST)
    assert rows[0] == ["model", "engine", "dtype", "weights", "attempts", "versions"]
    assert rows[1:] == [
        ["judge", "http", "-", "API model gpt-4o at api.example.com", "1", "git sha aaa; vllm 0.11.0; torch 2.8.0"],
        ["old", "transformers", "-", "-", "1", "git sha aaa; vllm 0.11.0; torch 2.8.0"],  # from before `weights`
        ["rm", "vllm", "bfloat16", f"path org/rm@{'c' * 40}; tokenizer org/tok@(not in the cache)", "1, 2",
         "git sha aaa; vllm 0.11.0 (attempt 1) vs 0.12.0 (attempt 2); torch 2.8.0"],
        ["tiny", "transformers", "float32", "path builtin:tiny-random-classifier (built-in, hash 0123456789ab)", "2",
         "git sha aaa; vllm 0.12.0; torch 2.8.0"]]
    assert model_provenance({"cells": {}}) == []


def test_the_report_prints_what_produced_each_models_numbers(tmp_path):
    root = build_run(str(tmp_path), "run", models=2, items=12)
    manifest = root.read_json("manifest.json")
    manifest["weights"] = {"synthetic-rm-01": {"engine": "vllm", "dtype": "bfloat16",
                                               "path": {"hub": "org/rm", "commit": "c" * 40}}}
    root.write_json("manifest.json", manifest)
    lines: list[str] = []
    write_report(root, out=lines.append)
    models = next(line for line in lines if line.startswith("Models (what produced their numbers"))
    assert f"path org/rm@{'c' * 40}" in models and "synthetic-rm-00" in models
    assert b"What produced each model's numbers" in root.read_bytes("report/index.html")
