"""mtRAG retrieval data: BEIR-style corpus, query and qrels files, and where they lie among a config's `data`.

Data (`data` of the benchmark config): folders or files holding, for each domain, a corpus
(`<domain>.jsonl`, `.jsonl.gz` or the official `.jsonl.zip`) and a retrieval folder (`<domain>/qrels.tsv` and
`<domain>/<strategy>.jsonl`, or the official `<domain>/qrels/dev.tsv` and `<domain>/<domain>_<strategy>.jsonl`).
Query and qrels ids are normalised on reading (benchmarks.mtrag.common.task_id).
"""
from __future__ import annotations

import csv
import os
import re
from collections.abc import Sequence

from benchmarks.decoding import quoted
from benchmarks.mtrag.common import Loaded, domain, json_objects, numbered_lines, report, task_id

BENCHMARK = "mtrag_retrieval"  # the benchmark's name in item ids and metrics
STRATEGIES = ("lastturn", "rewrite", "questions")  # the released query files (docs/protocols.md 3)
QRELS_HEADER = ("query-id", "corpus-id", "score")
CORPUS_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zip")
_SPEAKER_TAG = re.compile(r"\|(?:user|agent)\|:\s*")


def strip_speaker_tags(text: str) -> str:
    """Query text without the `|user|: ` tags the released query files put before every user turn."""
    return "\n".join(line for line in (_SPEAKER_TAG.sub("", part).strip() for part in text.split("\n")) if line)


# ---- where the files are


def queries_path(root: str, domain_name: str, strategy: str) -> str:
    """A domain's query file for a strategy under a retrieval folder: our `<domain>/<strategy>.jsonl`, or the
    official `<domain>/<domain>_<strategy>.jsonl` (human/retrieval_tasks)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown query strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")
    d = domain(domain_name)
    return _first_existing([os.path.join(root, d, f"{strategy}.jsonl"), os.path.join(root, d, f"{d}_{strategy}.jsonl")])


def qrels_path(root: str, domain_name: str) -> str:
    """A domain's qrels under a retrieval folder: our `<domain>/qrels.tsv` or the official `<domain>/qrels/dev.tsv`."""
    d = domain(domain_name)
    return _first_existing([os.path.join(root, d, "qrels.tsv"), os.path.join(root, d, "qrels", "dev.tsv")])


def _first_existing(paths: list[str]) -> str:
    for path in paths:
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f"none of these files exists: {', '.join(paths)}")


def corpus_file(data: Sequence[str], name: str) -> str:
    """The corpus of a domain among the data paths: a file named `<domain>.jsonl[.gz|.zip]`, or one in a folder."""
    d = domain(name)
    wanted = [d + suffix for suffix in CORPUS_SUFFIXES]
    for path in data:
        if os.path.isfile(path) and os.path.basename(path) in wanted:
            return path
        for folder in (path, os.path.join(path, "passage_level")):  # the official corpora/passage_level/
            for file in wanted:
                if os.path.isfile(os.path.join(folder, file)):
                    return os.path.join(folder, file)
    raise FileNotFoundError(f"no corpus for {d} ({' or '.join(wanted)}) in the benchmark's data: {', '.join(data)}")


def retrieval_root(data: Sequence[str], name: str) -> str:
    """The data folder holding the domain's qrels (`<domain>/qrels.tsv` or `<domain>/qrels/dev.tsv`)."""
    for path in data:
        if os.path.isdir(path):
            try:
                qrels_path(path, name)
                return path
            except FileNotFoundError:
                continue
    raise FileNotFoundError(f"no qrels for {domain(name)} in the benchmark's data: {', '.join(data)}")


# ---- loaders


def load_corpus(path: str) -> Loaded[dict[str, dict[str, str]]]:
    """Passages {_id: {"title", "text"}} from a BEIR corpus: .jsonl, .jsonl.gz, or the official .jsonl.zip."""
    corpus: dict[str, dict[str, str]] = {}
    problems: list[str] = []
    first_line: dict[str, str] = {}
    for where, obj in json_objects(path, ("_id", "text"), problems):
        pid = obj["_id"]
        if pid in corpus:
            report(problems, f"{where}: duplicate _id {quoted(pid)} (first at {first_line[pid]}; that one is kept)")
            continue
        title = obj.get("title")
        corpus[pid] = {"title": title if isinstance(title, str) else "", "text": obj["text"]}
        first_line[pid] = where
    return Loaded(corpus, problems)


def load_queries(path: str, strip_tags: bool = False) -> Loaded[dict[str, str]]:
    """Queries {task id: text} from a BEIR queries file (`_id`, `text`); ids normalised with task_id().

    The released texts keep a `|user|: ` tag before each user turn; strip_tags=True removes them.
    """
    queries: dict[str, str] = {}
    problems: list[str] = []
    first_line: dict[str, str] = {}
    for where, obj in json_objects(path, ("_id", "text"), problems):
        qid = task_id(obj["_id"])
        if not obj["text"].strip():
            report(problems, f"{where}: field 'text' empty: no query to ask")
            continue
        if qid in queries:
            report(problems, f"{where}: duplicate _id {quoted(qid)} (first at {first_line[qid]}; that one is kept)")
            continue
        queries[qid] = strip_speaker_tags(obj["text"]) if strip_tags else obj["text"]
        first_line[qid] = where
    return Loaded(queries, problems)


def load_qrels(path: str) -> Loaded[dict[str, dict[str, int]]]:
    """Judgements {task id: {passage id: relevance}} from a BEIR qrels TSV with its header line.

    Read as the official script reads it (csv, tab-separated; a repeated pair keeps the last score), with
    task ids normalised. A file without the header is still read, with line 1 reported.
    """
    qrels: dict[str, dict[str, int]] = {}
    problems: list[str] = []
    for where, number, line in numbered_lines(path, problems):
        try:
            fields = next(csv.reader([line], delimiter="\t", quoting=csv.QUOTE_MINIMAL), [])
        except csv.Error as e:  # e.g. a field past csv's size limit
            report(problems, f"{where}:{number}: not a TSV line ({e})")
            continue
        if number == 1 and tuple(f.strip() for f in fields) == QRELS_HEADER:
            continue
        if number == 1:
            report(problems, f"{where}:1: no header line ({', '.join(QRELS_HEADER)}); line 1 read as data")
        if not fields or not "".join(fields).strip():
            continue
        if len(fields) != 3:
            report(problems, f"{where}:{number}: expected 3 tab-separated fields (query-id, corpus-id, "
                             f"score), found {len(fields)}")
            continue
        qid, pid, score = (f.strip() for f in fields)
        if not qid or not pid:
            report(problems, f"{where}:{number}: empty {'query-id' if not qid else 'corpus-id'}")
            continue
        try:
            relevance = int(score)
        except ValueError:
            report(problems, f"{where}:{number}: score {quoted(score)} is not an integer")
            continue
        qrels.setdefault(task_id(qid), {})[pid] = relevance
    return Loaded(qrels, problems)


def merged_qrels(paths: Sequence[str]) -> Loaded[dict[str, dict[str, int]]]:
    """One qrels table from several files (mtRAG task ids are unique across domains), and their problems."""
    qrels: dict[str, dict[str, int]] = {}
    problems: list[str] = []
    for path in paths:
        loaded = load_qrels(path)
        problems += loaded.problems
        for qid, docs in loaded.data.items():
            qrels.setdefault(qid, {}).update(docs)
    return Loaded(qrels, problems)
