"""What manifest.json records of the weights each engine loaded (jobs.engines.weights.weights_record), and the
check that names hub model files pinned to no commit."""
from __future__ import annotations

from hub_server import HubRepo, fake_hub

from jobs.cli import main
from jobs.config import ModelConfig
from jobs.engines.http.settings import ApiSettings
from jobs.engines.weights import folder_hash, unpinned, weights_record
from jobs.loading import PROJECT_CONF, list_models

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_a_hub_model_records_its_cached_commit_and_a_local_folder_its_hash(tmp_path, monkeypatch):
    from huggingface_hub import snapshot_download

    with fake_hub({"org/rm": HubRepo({"config.json": b"{}"}), "org/tok": HubRepo({"tokenizer.json": b"{}"})},
                  tmp_path / "hf", monkeypatch) as hub:
        snapshot_download("org/rm")
        model = ModelConfig(name="rm", path="org/rm", kind="discriminative", tokenizer="org/tok", dtype="bfloat16")
        assert weights_record(model) == {"engine": "vllm", "dtype": "bfloat16",
                                         "path": {"hub": "org/rm", "commit": hub.repos["org/rm"].commit},
                                         "tokenizer": {"hub": "org/tok", "commit": None}}  # not fetched
    folder = tmp_path / "local"
    folder.mkdir()
    (folder / "config.json").write_text('{"hidden_size": 8}')
    (folder / "model.safetensors").write_bytes(b"x" * 10)
    local = ModelConfig(name="local", path=str(folder), kind="discriminative", engine="transformers")
    first = weights_record(local)["path"]
    assert first == {"folder": str(folder), "hash": folder_hash(folder)} and len(first["hash"]) == 12
    (folder / "model.safetensors").write_bytes(b"x" * 11)  # other weights: another hash
    assert weights_record(local)["path"]["hash"] != first["hash"]
    assert folder_hash(tmp_path / "absent") is None


def test_an_api_model_records_its_name_and_host_never_its_key(monkeypatch):
    monkeypatch.setenv("JUDGE_BASE", "https://api.example.com/v1")
    monkeypatch.setenv("JUDGE_KEY", "sk-secret-value")
    judge = ModelConfig(name="j", path="gpt-4o", kind="api", engine="http",
                        api=ApiSettings(base_env="JUDGE_BASE", key_env="JUDGE_KEY"))
    record = weights_record(judge)
    assert record == {"engine": "http", "model": "gpt-4o", "api_host": "api.example.com"}
    assert "sk-secret" not in repr(record)


def test_hub_model_files_without_a_commit_sha_are_named(capsys):
    models = [ModelConfig(name="branch", path="org/a", kind="discriminative", revision="main"),
              ModelConfig(name="none", path="org/b", kind="discriminative"),
              ModelConfig(name="pinned", path="org/c", kind="discriminative", revision=COMMIT),
              ModelConfig(name="built_in", path="builtin:tiny-random-classifier", kind="discriminative"),
              ModelConfig(name="folder", path="/models/x", kind="discriminative")]
    assert unpinned(models) == ["branch", "none"]
    assert main(["models"]) == 0  # the registry's files, named on `ragjudge models`
    names = unpinned(list_models(PROJECT_CONF))
    line = capsys.readouterr().err.splitlines()[-1]  # a warning, beside the table
    assert line.startswith(f"ragjudge models: {len(names)} model files load hub weights at no commit sha") and ", ".join(names) in line


def test_a_built_in_model_that_cannot_be_had_records_no_hash_rather_than_failing():
    record = weights_record(ModelConfig(name="x", path="builtin:no-such-model", kind="discriminative"))
    assert record["path"] == {"built-in": "builtin:no-such-model", "hash": None}
