"""Helpers of the mtRAG generation tests: small tasks in the official format, answers as an engine writes them,
the benchmark and its typed options."""
from __future__ import annotations

import json

from bundled_data import GENERATION

from benchmarks.mtrag.generation import MtragGeneration, Options
from benchmarks.options import typed_options

REFERENCE = str(GENERATION / "mtragun_reference.jsonl.gz")
SAMPLE = str(GENERATION / "sample_responses_10.jsonl")
D2 = ('Given one or more documents and a user query, generate a response to the query using less than 150 words '
      'that is grounded in the provided documents. If no answer can be found in the documents, say, "I do not '
      'have specific information"')
g = MtragGeneration()


def opts(raw: dict | None = None) -> Options:
    """A config's options mapping as the benchmark takes it."""
    return typed_options(Options, raw)


OPTS = opts()  # the defaults: the paper's protocol


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def task(tid="c1<::>2", answerability="ANSWERABLE", contexts=None, **extra):
    """A small task in the official format: two user turns, the last one asked."""
    row = {"task_id": tid, "conversation_id": tid.split("<::>")[0], "turn": 2, "Collection": "mt-rag-clapnq-elser-"
           "512-100-20240503",
           "contexts": [{"document_id": "d1", "text": "Paris is the capital of France."},
                        {"document_id": "d2", "text": "France is in Europe.", "title": "France"}]
           if contexts is None else contexts,
           "input": [{"speaker": "user", "text": "Tell me about France."},
                     {"speaker": "agent", "text": "France is a country."},
                     {"speaker": "user", "text": "What is its capital?"}],
           "targets": [{"speaker": "agent", "text": "The capital of France is Paris."}],
           "answerability": [answerability], "Question Type": ["Factoid"], "Multi-Turn": ["Follow-up"]}
    return {**row, **extra}


def item_of(tmp_path, row, name="t.jsonl"):
    (item,) = g.load_items(write_jsonl(tmp_path / name, [row]))
    assert item["error"] is None, item["error"]
    return item


def answer(request, text, error=None):
    return {"request_id": request["request_id"], "item_id": request["item_id"], "subset": request["subset"],
            "variant": request["variant"], "error": error, "truncated": False, "n_tokens": 5,
            "text": None if error else text}
