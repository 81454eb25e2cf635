"""What the Bi'anBench tests share: the bundled sample, rows and answers to build, the benchmark, its options."""
import json

from benchmarks.bianbench import BianBench, Options
from benchmarks.options import typed_options

SAMPLE = "data/bianbench_table10.jsonl"
BIAN = BianBench()
DEFAULT = Options()


def options(**raw):
    """Options as a config's mapping would give them (typed, so a bad key fails as it would in a run)."""
    return typed_options(Options, raw)


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return str(path)


def qa_row(**extra):
    row = {"id": 1, "task": "Question Answering", "context": "Paris is the capital of France.",
           "question": "What is the capital of France?", "answer": "Paris", "label": "PASS",
           "source_ds": "HaluEval_qa", "split": "en"}
    return {**row, **extra}


def answer(run, text=None, logprobs=None, error=None):
    return {"variant": f"run{run}", "text": text, "candidate_logprobs": logprobs, "error": error,
            "truncated": error is not None, "n_tokens": 100}
