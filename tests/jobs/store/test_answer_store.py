"""The answer store (ROOT/_answers): a new run under the same root asks a model only what no run asked it before,
a swapped judge re-asks only its own requests, failed answers are asked again, and `ragjudge cache` lists and
prunes it. Cells run through jobs.sweep.cell.run_cell with the stand-in engine (tests/stand_in.py), counting
the requests each engine call was sent."""
from __future__ import annotations

import json
import time
from dataclasses import replace

import pyarrow.parquet as pq
import pytest
import rounds_stub
from stand_in import run, stand_in_engine

from jobs.cli import main
from jobs.config import ModelConfig
from jobs.engines.base import engines
from jobs.engines.identity import model_identity
from jobs.store.answers import AnswerStore, answer_key
from jobs.store.run_root import RunRoot


@pytest.fixture
def stub(monkeypatch):
    return rounds_stub.register(monkeypatch)


def _judge(name: str = "judge", path: str = "p", **settings) -> ModelConfig:
    return ModelConfig(name=name, path=path, kind="generative", engine="stand_in", **settings)


def _asked(calls: list[list[str]]) -> list[str]:
    return sorted(i for call in calls for i in call)


def test_a_second_run_under_the_same_root_asks_nothing_and_gets_the_same_metrics(tmp_path, stub, monkeypatch):
    calls = stand_in_engine(monkeypatch)
    root, first = run(tmp_path, stub(), run_name="first", cache=True)
    assert len(_asked(calls)) == 9 and first.status == "done"
    calls.clear()
    second_root, second = run(tmp_path, stub(), run_name="second", cache=True)
    assert calls == [] and second.status == "done" and second.metrics == first.metrics
    assert second_root.read_json("manifest.json")["cells"]["stub/judge"]["cached_answers"] == 9
    assert root.read_json("manifest.json")["cells"]["stub/judge"]["cached_answers"] == 0
    assert {r["request_id"]: r["text"] for r in second_root.read_rows("requests", "stub", "judge")} == {
        r["request_id"]: r["text"] for r in root.read_rows("requests", "stub", "judge")}


def test_a_swapped_judge_re_asks_only_its_own_requests(tmp_path, stub, monkeypatch):
    calls = []

    def reply(request, model):
        calls.append((model.name, request["request_id"]))
        return f"{model.name} on {request['variant']}"

    stand_in_engine(monkeypatch, reply)
    run(tmp_path, stub(routed=True), run_name="first", judges={"critic": _judge("critic", "critic-1")}, cache=True)
    calls.clear()
    _, outcome = run(tmp_path, stub(routed=True), run_name="second", judges={"critic": _judge("critic", "critic-2")},
                     cache=True)
    assert outcome.status == "done"
    assert calls == [("critic", f"stub/{i}#judge") for i in range(3)]  # the generations all came from the store


def test_without_the_cache_every_request_is_asked_and_nothing_is_kept(tmp_path, stub, monkeypatch):
    calls = stand_in_engine(monkeypatch)
    root, _ = run(tmp_path, stub(), run_name="first", cache=True)
    calls.clear()
    run(tmp_path, stub(), run_name="second", cache=False)
    assert len(_asked(calls)) == 9
    assert len(AnswerStore(root).parts()) == 1  # the first run's part only


def test_a_setting_that_changes_answers_misses_and_one_that_does_not_hits(tmp_path, stub, monkeypatch):
    calls = stand_in_engine(monkeypatch)
    run(tmp_path, stub(), model=_judge(), run_name="first", cache=True)
    calls.clear()
    run(tmp_path, stub(), model=_judge(batch_size=3, note="renamed run"), run_name="batch", cache=True)
    assert calls == []  # batch_size and note are run settings: the answers stand
    run(tmp_path, stub(), model=_judge(name="another-file"), run_name="renamed", cache=True)
    assert calls == []  # another model file of the same model shares its answers
    run(tmp_path, stub(), model=_judge(max_new_tokens=99), run_name="longer", cache=True)
    assert len(_asked(calls)) == 9


def test_failed_answers_are_not_kept_and_are_asked_again(tmp_path, stub, monkeypatch):
    calls: list[list[str]] = []
    failing = {"stub/1#generate"}  # fails once

    def answer(requests, model, log=print, host=None):
        calls.append([r["request_id"] for r in requests])
        for r in requests:
            failed = r["request_id"] in failing
            failing.discard(r["request_id"])
            yield {"request_id": r["request_id"], "item_id": r["item_id"], "subset": r["subset"],
                   "variant": r["variant"], "text": None if failed else f"answer to {r['messages'][0]['content']}",
                   "error": "api: HTTP 503 (model 'judge', 6 tries)" if failed else None}

    monkeypatch.setattr(engines()["stand_in"], "answer", answer)
    run(tmp_path, stub(), run_name="first", cache=True)
    calls.clear()
    run(tmp_path, stub(), run_name="second", cache=True)
    # The failed generation is asked again; its judge and verdict requests read the new text, so they are new.
    assert _asked(calls) == ["stub/1#generate", "stub/1#judge", "stub/1#verdict"]


def test_the_key_is_the_request_inputs_and_the_model_identity_not_the_ids():
    request = {"request_id": "a#1", "item_id": "a", "subset": "s", "variant": "1",
               "messages": [{"role": "user", "content": "q"}], "seed": 3}
    same = {**request, "request_id": "b#2", "item_id": "b", "variant": "2", "subset": "t"}
    assert answer_key("m", request) == answer_key("m", same)
    assert answer_key("m", request) != answer_key("n", request)
    assert answer_key("m", request) != answer_key("m", {**request, "seed": 4})
    assert answer_key("m", request) != answer_key("m", {**request, "prefill": "Choose "})
    assert answer_key("m", request) == answer_key("m", {**request, "route": "critic", "permutation": [1, 0]})


def _folder(where, hidden_size: int):
    where.mkdir()
    (where / "config.json").write_text(json.dumps({"hidden_size": hidden_size}))
    (where / "model.safetensors").write_bytes(b"x" * 100)
    return str(where)


def test_a_local_folder_is_known_by_its_content_not_its_place(tmp_path):
    def rm(path: str) -> ModelConfig:
        return ModelConfig(name="a", path=path, kind="discriminative", engine="transformers")

    here, moved, other = (_folder(tmp_path / name, size) for name, size in (("here", 8), ("moved", 8), ("other", 16)))
    assert model_identity(rm(here)) == model_identity(replace(rm(moved), name="b"))
    assert model_identity(rm(here)) != model_identity(rm(other))
    assert model_identity(rm(here)) != model_identity(replace(rm(here), dtype="bfloat16"))


def test_a_hub_model_is_known_by_its_cached_commit_so_pinning_that_commit_keeps_its_answers(tmp_path, monkeypatch):
    from hub_cache import cache_repo, offline_hub_cache

    def rm(**settings) -> ModelConfig:
        return ModelConfig(name="a", path="org/rm", kind="discriminative", engine="transformers", **settings)

    unknown = model_identity(rm())  # not in the cache: named as written
    assert unknown != model_identity(rm(revision="v2"))
    cache = offline_hub_cache(tmp_path, monkeypatch)
    snapshot = cache_repo(cache, "org/rm", {"config.json": b"{}", "model.safetensors": b"w"}, repo_type="model")
    cached = model_identity(rm())
    assert cached != unknown and cached == model_identity(rm(revision=snapshot.name))


def test_cache_ls_and_prune_by_model_and_by_age(tmp_path, stub, monkeypatch, capsys):
    stand_in_engine(monkeypatch)
    run(tmp_path, stub(), model=_judge(path="org/one"), run_name="a", cache=True)
    run(tmp_path, stub(), model=_judge(path="two"), run_name="b", cache=True)
    assert main(["cache", "ls", str(tmp_path)]) == 0
    listing = capsys.readouterr().out
    assert "org__one" in listing and "two" in listing and listing.count("     9  ") == 2
    assert main(["cache", "prune", str(tmp_path)]) == 2  # no filter: nothing removed
    assert main(["cache", "prune", str(tmp_path), "--older-than", "1"]) == 0  # both written just now
    assert len(AnswerStore(_root(tmp_path)).parts()) == 2
    assert main(["cache", "prune", str(tmp_path), "--model", "org/one"]) == 0
    assert "removed 1 parts (9 answers) of 2" in capsys.readouterr().out
    assert [p.model for p in AnswerStore(_root(tmp_path)).parts()] == ["two"]
    monkeypatch.setattr(time, "time", lambda: 1e10)  # far in the future: every part is old
    assert main(["cache", "prune", str(tmp_path), "--older-than", "30"]) == 0
    assert AnswerStore(_root(tmp_path)).parts() == []


def _root(tmp_path):
    return RunRoot(str(tmp_path), "_")


@pytest.mark.parametrize("garbage", [b"", b"not parquet"])
def test_an_unreadable_part_is_said_and_its_answers_asked_again(tmp_path, stub, monkeypatch, garbage):
    calls = stand_in_engine(monkeypatch)
    root, _ = run(tmp_path, stub(), run_name="first", cache=True)
    (part,) = AnswerStore(root).parts()
    (tmp_path / "_answers" / part.relpath).write_bytes(garbage)
    calls.clear()
    lines: list[str] = []
    found = AnswerStore(root, lines.append).find("p", ["x"])
    assert found == {} and "cannot be read" in lines[0] and "asked again" in lines[0]
    run(tmp_path, stub(), run_name="second", cache=True)
    assert len(_asked(calls)) == 9


def test_answers_stored_before_a_resume_are_kept_too(tmp_path, stub, monkeypatch):
    """The first attempt dies when the judge round begins, its three generations stored; the resumed attempt
    asks the other six, and the store then keeps all nine, so a new run asks nothing."""
    calls = stand_in_engine(monkeypatch)
    answer, given = engines()["stand_in"].answer, []

    def dies_after_three(requests, model, log=print, host=None):
        for row in answer(requests, model, log, host):
            if len(given) == 3:
                raise RuntimeError("the engine died")
            given.append(row)
            yield row

    with monkeypatch.context() as patch:
        patch.setattr(engines()["stand_in"], "answer", dies_after_three)
        root, killed = run(tmp_path, stub(), run_name="first", cache=True)
    assert killed.status == "failed" and len(root.read_rows("requests", "stub", "judge")) == 3
    calls.clear()
    _, resumed = run(tmp_path, stub(), run_name="first", cache=True)
    assert resumed.status == "done" and len(_asked(calls)) == 6
    assert sum(AnswerStore(root).rows(part) for part in AnswerStore(root).parts()) == 9
    calls.clear()
    run(tmp_path, stub(), run_name="second", cache=True)
    assert calls == []


def test_a_store_reads_each_part_once_for_its_keys_and_again_only_for_a_hit(tmp_path, stub, monkeypatch):
    stand_in_engine(monkeypatch)
    root, _ = run(tmp_path, stub(), model=_judge(), run_name="first", cache=True)
    run(tmp_path, stub(), model=_judge(max_new_tokens=99), run_name="longer", cache=True)
    store = AnswerStore(root)
    first, second = (part.relpath for part in store.parts())
    reads: list[str] = []
    read_bytes = store.cache.read_bytes
    monkeypatch.setattr(store.cache, "read_bytes", lambda relpath: reads.append(relpath) or read_bytes(relpath))
    wanted = pq.read_table(tmp_path / "_answers" / first, columns=["key"]).column("key").to_pylist()[:2]
    assert set(store.find("p", wanted)) == set(wanted)
    assert sorted(reads) == sorted([first, second, first])  # both indexed, the one with the answers read back
    reads.clear()
    assert set(store.find("p", wanted)) == set(wanted) and reads == [first]
    reads.clear()
    assert store.find("p", ["no such key"]) == {} and reads == []


def test_a_pickled_store_reads_its_parts_anew_and_keeps_its_identities(tmp_path, stub, monkeypatch):
    """A shard task's copy (jobs.flow.shard_tasks): what the driver's store had indexed does not travel, its
    identities do, and the copy finds the same answers."""
    import pickle

    stand_in_engine(monkeypatch)
    root, _ = run(tmp_path, stub(), model=_judge(), run_name="first", cache=True)
    store = AnswerStore(root)
    (part,) = store.parts()
    wanted = pq.read_table(tmp_path / "_answers" / part.relpath, columns=["key"]).column("key").to_pylist()[:2]
    found = store.find("p", wanted)
    store.identities["settings"] = "digest"
    copy = pickle.loads(pickle.dumps(store))
    assert (copy._where, copy._indexed, copy.identities) == ({}, set(), {"settings": "digest"})
    assert copy.find("p", wanted) == found and len(found) == 2
    assert copy._indexed == {part.relpath}


def test_a_swapped_judge_in_an_mtrag_generation_cell_re_asks_only_the_judges_requests(tmp_path, monkeypatch):
    """Two bundled MTRAG-UN tasks: the generator answers, a critic judges (RB_llm, IDK, RAGAS statements and
    verdicts). Swapping the critic for another model re-asks the critic's requests only, counted per model from
    what each engine was sent; the generations come from the store."""
    from jobs.config import BenchmarkConfig

    asked: list[tuple[str, str]] = []

    replies = {"generation": "The answer is 42.", "rb_llm": "Rating: 3", "idk": "No",
               "statements": '{"statements": ["The answer is 42."]}',
               "verdicts": '{"statements": [{"statement": "The answer is 42.", "reason": "said", "verdict": 1}]}'}

    def reply(request, model):
        asked.append((model.name, request["variant"]))
        return replies[request["variant"]]

    stand_in_engine(monkeypatch, reply)
    bench = BenchmarkConfig(name="mtrag", module="mtrag_generation",
                            data=["data/mtrag/generation/mtragun_reference.jsonl.gz"], options={
                                "responses": "generate", "bertscore": None,
                                "task_ids": ["a06dfd31abd6a1fa4ef4058fdbcb8b95<::>1",
                                             "2f671f98cc9ba4051f126197b0039622<::>1"],
                                "judges": {"rb_llm": ["critic"], "idk": "critic", "ragas": "critic"}})
    generator = _judge("generator", "gen-1")
    _, first = run(tmp_path, bench, model=generator, run_name="first", judges={"critic": _judge("critic", "critic-1")},
                   cache=True)
    assert first.status == "done", first.message
    judged = sorted(v for name, v in asked if name == "critic")
    assert [v for name, v in asked if name == "generator"] == ["generation"] * 2
    assert set(judged) == {"rb_llm", "idk", "statements", "verdicts"}, judged
    asked.clear()
    _, second = run(tmp_path, bench, model=generator, run_name="second",
                    judges={"critic": _judge("critic", "critic-2")}, cache=True)
    assert second.status == "done" and second.metrics["settings"] and sorted(v for _, v in asked) == judged
    assert all(name == "critic" for name, _ in asked)  # not one generation asked again


def test_ls_counts_answers_from_part_names_without_reading_a_part(tmp_path, stub, monkeypatch, capsys):
    stand_in_engine(monkeypatch)
    run(tmp_path, stub(), model=_judge(path="one"), run_name="a", cache=True)
    (part,) = AnswerStore(_root(tmp_path)).parts()
    assert part.rows == 9 and part.name.split("-")[1] == "9r"
    older = tmp_path / "_answers" / "model=one" / "part-20261125T000000Z-0123abcd.parquet"  # named before the count
    older.write_bytes((tmp_path / "_answers" / part.relpath).read_bytes())
    read: list[str] = []
    monkeypatch.setattr(RunRoot, "read_bytes", lambda self, relpath: read.append(relpath) or older.read_bytes())
    assert main(["cache", "ls", str(tmp_path)]) == 0
    assert read == ["model=one/part-20261125T000000Z-0123abcd.parquet"]  # only the one without a count in its name
    assert "     2       18  " in capsys.readouterr().out
