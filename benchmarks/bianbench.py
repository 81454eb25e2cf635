"""Bi'anBench (seeds/bian_hallucination.txt; rules in PROTOCOLS.md 2).

RAG hallucination detection: a judge reads a context and an answer (QA, summary, data-to-text output or
translation) and says PASS (faithful to the context) or FAIL. Three splits: EN (13,301 rows), ZH (7,757) and
CF (1,934, counterfactual QA in both languages). The paper samples every judgement three times (temperature
0.8, top-p 0.7) and reports the mean, so `expand` makes one request per run and `combine` one row per run.

Averaging (checked against Tables 2, 17 and 18): within one run, a subset's accuracy is the share of its
rows judged right; a task's score is the mean of its subsets' accuracies; a split's "Avg." is the mean over
*all* subsets of the split, not over tasks (GPT-4o-0806 EN: mean of the 14 subsets of Table 17 = 84.8 as
printed, mean of the four task scores = 83.5). Every figure is then averaged over runs, with its spread.
"""
from __future__ import annotations

import ast
import functools
import json
import os
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from benchmarks.options import is_int, is_number, unknown_keys
from benchmarks.records import read_items
from benchmarks.stats import bootstrap_ci, stable_seed
from benchmarks.tables import grid

BENCHMARK = "bianbench"
KINDS = ("generative",)
SPLITS = ("en", "zh", "cf")
LANGUAGES = ("en", "zh")
TASKS = ("qa", "summarization", "data_to_text", "translation")
TASK_TITLES = {"qa": "QA", "summarization": "Summarization", "data_to_text": "Data-to-Text",
               "translation": "Machine Translation"}
# Row `task` values: the paper's names (Table 10) and our short ones; compared lower-case, '-'/' ' as '_'.
TASK_NAMES = {"question_answering": "qa", "qa": "qa", "summarization": "summarization",
              "data_to_text": "data_to_text", "machine_translation": "translation", "translation": "translation"}
LABELS = {"PASS": "PASS", "FAIL": "FAIL", "通过": "PASS", "失败": "FAIL"}
# What each task's prompt is filled with: placeholder -> item field.
PLACEHOLDERS = {
    "qa": {"question": "question", "document": "context", "answer": "answer"},
    "summarization": {"document": "context", "summary": "answer"},
    "data_to_text": {"raw_data": "context", "target_text": "answer"},
    "translation": {"source_text": "context", "translated_text": "answer"},
}
# The prompts of Table 12: every (task, language) pair the paper has a prompt for.
PAPER_PROMPTS = tuple((task, "en") for task in TASKS) + (("qa", "zh"), ("summarization", "zh"),
                                                        ("translation", "zh"))
# Table 2 columns per split, and the subsets of Tables 17 and 18 in the paper's order.
TABLE2_TASKS = {"en": TASKS, "zh": ("qa", "summarization", "translation")}
PAPER_SUBSETS = {
    "en": {"qa": ("HaluEval_qa", "RAGTruth_qa", "FinanceBench", "DROP", "CovidQA", "PubMedQA", "ASQA", "IfQA"),
           "summarization": ("FIB", "HaluEval_sum"), "data_to_text": ("WebNLG", "RAGTruth_d2t"),
           "translation": ("PDC", "WMT21")},
    "zh": {"qa": ("CRUD_MDQA", "WebQA1.0", "LawBench_RC", "WebCPM-LFQA"),
           "summarization": ("CSDS", "CRUD_sum", "LawBench_sum"), "translation": ("PDC", "WMT21")},
}
# The parse-free verdict: the engine opens the answer with the prompt's JSON up to the verdict's value and
# reads the log-prob of each candidate's first token there. This asks for the verdict *before* the reasoning
# the prompt asks for (REASONING comes first in it), so it is a different protocol from the paper's, which
# parses the verdict written after the reasoning; both are recorded, `combine(verdict=...)` picks the scored one.
VERDICT_PREFILL = {"en": '{"SCORE": "', "zh": '{"判断": "'}
VERDICT_CANDIDATES = {"en": ("PASS", "FAIL"), "zh": ("通过", "失败")}  # aligned: PASS first
PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OPTIONS: dict[str, Any] = {
    "templates_file": "conf/prompts/bianbench_table12.yaml",  # relative to the project root
    "templates": {},
    "runs": 3,
    "temperature": 0.8,
    "top_p": 0.7,
    "max_tokens": 512,
    "greedy": False,
}
_SPLIT_IN_NAME = re.compile(r"(?:^|[_\-. ])(en|zh|cf)$", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


# ---- options and prompts ----

@functools.lru_cache(maxsize=8)
def _templates_file(path: str) -> dict[str, dict[str, str]]:
    """The `templates` mapping of a prompt file, read once per process (expand runs once per item)."""
    full = Path(path) if os.path.isabs(path) else PROJECT_ROOT / path
    try:
        loaded = yaml.safe_load(full.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ValueError(f"options.templates_file: cannot read {full}: {e}") from None
    templates = loaded.get("templates") if isinstance(loaded, dict) else None
    if isinstance(templates, dict):
        return templates
    raise ValueError(f"options.templates_file: {full} has no 'templates' mapping at the top level")


def settings(options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The options in force: defaults, then the YAML's; `templates` is the file's set with inline entries over it.

    With greedy, one run at temperature 0 and top-p 1. Raises ValueError (naming the key) on an unreadable
    templates file; check_options reports that before a run.
    """
    merged = {**DEFAULT_OPTIONS, **dict(options or {})}
    templates: dict[str, dict[str, Any]] = {}
    if merged["templates_file"]:
        templates = {task: dict(langs) for task, langs in _templates_file(str(merged["templates_file"])).items()
                     if isinstance(langs, Mapping)}
    inline = merged["templates"] if isinstance(merged["templates"], Mapping) else {}
    for task, langs in inline.items():
        if isinstance(langs, Mapping):
            templates.setdefault(task, {}).update(langs)
    merged["templates"] = templates
    if merged["greedy"]:
        merged.update(runs=1, temperature=0.0, top_p=1.0)
    return merged


def check_options(options: Mapping[str, Any] | None) -> list[str]:
    """Problems with the benchmark options, each naming its key; [] when fine."""
    options = dict(options or {})
    unknown = unknown_keys(options, DEFAULT_OPTIONS, "options")
    merged = {**DEFAULT_OPTIONS, **options}
    checks = {
        "runs": (lambda v: is_int(v) and v >= 1, "a whole number >= 1"),
        "max_tokens": (lambda v: is_int(v) and v >= 1, "a whole number >= 1"),
        "temperature": (lambda v: is_number(v) and v >= 0, "a number >= 0"),
        "top_p": (lambda v: is_number(v) and 0 < v <= 1, "a number in (0, 1]"),
        "greedy": (lambda v: isinstance(v, bool), "true or false"),
        "templates": (lambda v: v is None or isinstance(v, Mapping), "a mapping <task>: {<language>: <prompt>}"),
        "templates_file": (lambda v: v is None or isinstance(v, str), "a path, or null"),
    }
    problems = [f"options.{key}: {merged[key]!r} is not {what}" for key, (ok, what) in checks.items()
                if not ok(merged[key])]
    if problems:  # the template checks below need well-typed options
        return unknown + problems
    problems = unknown
    for task, langs in (merged["templates"] or {}).items():
        if task not in TASKS:
            problems.append(f"options.templates.{task}: unknown task (known: {', '.join(TASKS)})")
        elif not isinstance(langs, Mapping) or any(lang not in LANGUAGES for lang in langs):
            problems.append(f"options.templates.{task}: expected a mapping with keys among {', '.join(LANGUAGES)}")
    try:
        templates = settings(options)["templates"]
    except ValueError as e:
        return problems + [str(e)]
    for task, language in PAPER_PROMPTS:
        if not templates.get(task, {}).get(language):
            problems.append(f"options.templates.{task}.{language}: missing")
    for task in TASKS:
        for language, template in templates.get(task, {}).items():
            problems += _template_problems(task, language, template)
    return problems


def _template_problems(task: str, language: str, template: Any) -> list[str]:
    key = f"options.templates.{task}.{language}"
    if not isinstance(template, str):
        return [f"{key}: not text"]
    names = set(_PLACEHOLDER.findall(template))
    wanted = set(PLACEHOLDERS[task])
    problems = [f"{key}: placeholder {{{name}}} missing" for name in sorted(wanted - names)]
    fills = ", ".join(f"{{{w}}}" for w in PLACEHOLDERS[task])
    problems += [f"{key}: unknown placeholder {{{name}}} ({task} fills {fills})"
                 for name in sorted(names - wanted)]
    return problems


def check_items(items: Iterable[dict[str, Any]], options: Mapping[str, Any] | None = None) -> list[str]:
    """The (task, language) pairs the data needs and the options lack, one message per pair: the pipeline fails
    the cell with them before an engine starts. Called directly (e.g. `plan`), such items get no requests
    (expand) and one error row per run (combine) instead of an exception."""
    templates = settings(options)["templates"]
    needed: dict[tuple[str, str], list[str]] = defaultdict(list)
    for item in items:
        if not item.get("error") and not templates.get(item["task"], {}).get(item["language"]):
            needed[(item["task"], item["language"])].append(item["item_id"])
    return [f"options.templates.{task}.{language}: missing (needed by {len(ids)} item(s), e.g. {ids[0]})"
            for (task, language), ids in sorted(needed.items())]


def prompt(item: dict[str, Any], template: str) -> str:
    """The template filled with the item, in one pass: braces that name no placeholder stay as they are."""
    values = {name: str(item[field]) for name, field in PLACEHOLDERS[item["task"]].items()}
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)






# ---- loading ----

def load_items(path: str) -> Iterator[dict[str, Any]]:
    """Items from a JSONL/JSON/Parquet file or a folder of them; bad rows come out as error items, in place.

    A row's split is its `split` field when it has one, else its file name's ending (_en, _zh, _cf).
    """
    for record, item, problem in read_items(path, lambda r: _read_row(r.data, r.source),
                                            "duplicate of {} (same split and id)"):
        yield item if problem is None else _error_item(record.source, record.row, record.data or {}, problem)


def _read_row(row: dict[str, Any], source: str) -> tuple[dict[str, Any], list[str]]:
    """One row's item fields, and what is wrong with it (each problem names its field)."""
    problems: list[str] = []

    def text(field: str, required: bool = True) -> str:
        value = row.get(field)
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                problems.append(f"field '{field}' " + ("missing" if value is None else "empty"))
            return ""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            problems.append(f"field '{field}' is not text")
            return ""
        return str(value)

    source_id = text("id")
    split = str(row.get("split") or "").strip().lower()
    if not split:
        named = _SPLIT_IN_NAME.search(Path(source).name.split(".")[0])
        split = named.group(1).lower() if named else ""
        if not named:
            problems.append(f"field 'split' missing (and the file name {Path(source).name} does not end in "
                            "_en, _zh or _cf)")
    elif split not in SPLITS:
        problems.append(f"field 'split': {row.get('split')!r} is not one of {', '.join(SPLITS)}")
    task = task_name(row.get("task"))
    if task is None:
        problems.append("field 'task' missing" if row.get("task") is None else
                        f"field 'task': {row.get('task')!r} is not Question Answering, Summarization, Data-to-Text"
                        f" or Machine Translation (or {', '.join(TASKS)})")
    context = row.get("context")
    if isinstance(context, list) and all(isinstance(p, str) for p in context):
        context = "\n\n".join(context)  # passages as given, headings such as "新闻【1】:" included
    if context is None:
        problems.append("field 'context' missing")
    elif not isinstance(context, str):
        problems.append("field 'context' is neither text nor a list of texts")
    elif not context.strip():
        problems.append("field 'context' empty")
    question = text("question", required=task == "qa")
    answer = text("answer")
    raw_label = str(row.get("label") or "").strip()
    label = LABELS.get(raw_label.upper())
    if label is None:
        problems.append("field 'label' missing" if row.get("label") is None else
                        f"field 'label': {row.get('label')!r} is not PASS, FAIL, 通过 or 失败")
    subset = text("source_ds")
    kind = text("type", required=False)
    language = split if split in LANGUAGES else ""
    if split == "cf":
        stated = str(row.get("language") or "").strip().lower()
        if stated and stated not in LANGUAGES:
            problems.append(f"field 'language': {row.get('language')!r} is not en or zh")
        language = stated or ("zh" if raw_label in ("通过", "失败") else "en")
    item = {"item_id": f"{BENCHMARK}/{split}/{source_id}", "benchmark": BENCHMARK, "id": source_id,
            "split": split, "language": language, "task": task, "subset": subset, "type": kind, "label": label,
            "context": context, "question": question, "answer": answer}
    return item, problems


def task_name(value: Any) -> str | None:
    """The short task name of a row's `task` ('Data-to-Text' -> 'data_to_text'); None when unknown."""
    if not isinstance(value, str):
        return None
    return TASK_NAMES.get(re.sub(r"[\s\-]+", "_", value.strip().lower()))


def _error_item(source: str, row: int, data: dict[str, Any], problem: str) -> dict[str, Any]:
    subset = data.get("source_ds") if isinstance(data.get("source_ds"), str) else ""
    return {"item_id": f"{BENCHMARK}/{source}:{row}", "benchmark": BENCHMARK, "subset": subset, "source": source,
            "row": row, "error": problem}


# ---- requests ----

def expand(item: dict[str, Any], kind: str, options: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One request per run (variant run0..run{n-1}), each with its own seed from the item id and run.

    An item whose (task, language) has no template gets no requests; combine turns it into error rows naming
    the pair, so one missing prompt does not stop the cell (check_items finds them before a run).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown model kind {kind!r} for {BENCHMARK}; expected one of {KINDS}")
    opts = settings(options)
    template = opts["templates"].get(item["task"], {}).get(item["language"])
    if not template:
        return []
    messages = [{"role": "user", "content": prompt(item, template)}]
    return [
        {"request_id": f"{item['item_id']}#run{run}", "item_id": item["item_id"], "subset": item["subset"],
         "variant": f"run{run}", "messages": messages, "temperature": float(opts["temperature"]),
         "top_p": float(opts["top_p"]), "max_tokens": int(opts["max_tokens"]),
         "seed": stable_seed(item["item_id"], f"run{run}") % 2**31,
         "prefill": VERDICT_PREFILL[item["language"]], "candidates": list(VERDICT_CANDIDATES[item["language"]])}
        for run in range(int(opts["runs"]))
    ]


# ---- parsing ----

_VERDICT_KEYS = ("score", "判断")
_REASONING_KEYS = ("reasoning", "推理过程")
# "SCORE": "PASS" outside a parseable object (truncated or malformed JSON, or no braces at all). A quoted value
# must be closed: a verdict cut off mid-word is not read.
_KEY_VALUE = re.compile(r"""(?<!\w)(?:score|判断)["']?\s*[:：]\s*(["']?)\s*(pass|fail|通过|失败)\s*\1(?!\w)""",
                        re.IGNORECASE)
# The last resort: a verdict word on its own (no letter, digit or CJK character beside it). Upper case only for
# PASS/FAIL: "does not pass" or "fail to mention" in prose are not verdicts.
_STANDALONE = re.compile(r"(?<!\w)(PASS|FAIL|通过|失败)(?!\w)")


def parse_verdict(text: str | None) -> str:
    """PASS, FAIL or ERROR from a judge's output (PROTOCOLS.md 2).

    In order: the last JSON object (```json fences, single quotes and surrounding prose are fine) whose
    SCORE / 判断 (any case) holds PASS / FAIL / 通过 / 失败 (any case); else the last "SCORE": "<verdict>" pair
    in the text, which reads a complete verdict from JSON cut off later on; else the last standalone
    PASS / FAIL / 通过 / 失败; else ERROR.
    """
    text = text or ""
    for obj in reversed(_json_objects(text)):
        verdict = _verdict_of(_field(obj, _VERDICT_KEYS))
        if verdict:
            return verdict
    pairs = _KEY_VALUE.findall(text)
    if pairs:
        return LABELS[pairs[-1][1].upper()]
    words = _STANDALONE.findall(text)
    return LABELS[words[-1]] if words else "ERROR"


def parse_reasoning(text: str | None) -> str | None:
    """The REASONING / 推理过程 of the last JSON object that has one (a list of points joined by newlines)."""
    for obj in reversed(_json_objects(text or "")):
        value = _field(obj, _REASONING_KEYS)
        if isinstance(value, list):
            return "\n".join(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in value)
        if value is not None:
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return None


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level {...} in the text that parses as JSON or as a Python literal (single quotes), in order.

    Objects inside a parsed one are not listed separately; a '{' that does not start a parseable object is
    skipped and the search goes on inside it. json.JSONDecoder.raw_decode alone would miss single-quoted
    objects, hence the small quote-aware brace matcher.
    """
    found: list[dict[str, Any]] = []
    start = text.find("{")
    while start >= 0:
        end = _closing_brace(text, start)
        obj = _parse_object(text[start:end]) if end else None
        if obj is not None:
            found.append(obj)
            start = text.find("{", end)
        else:
            start = text.find("{", start + 1)
    return found


def _closing_brace(text: str, start: int) -> int | None:
    """The index just past the '}' closing the '{' at `start`, skipping braces in quoted strings; None if cut off."""
    depth, quote, i = 0, None, start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _parse_object(span: str) -> dict[str, Any] | None:
    try:
        value = json.loads(span)
    except ValueError:
        try:
            value = ast.literal_eval(span)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    return value if isinstance(value, dict) else None


def _field(obj: dict[str, Any], names: tuple[str, ...]) -> Any:
    for key, value in obj.items():
        if isinstance(key, str) and key.strip().lower() in names:
            return value
    return None


def _verdict_of(value: Any) -> str | None:
    return LABELS.get(value.strip().strip("\"'*.。!").strip().upper()) if isinstance(value, str) else None


def logprob_verdict(logprobs: list[float | None] | None) -> str | None:
    """PASS or FAIL from the candidates' log-probs [PASS-word, FAIL-word]; a candidate outside the engine's
    top-k (None) loses to one inside it; both missing or equal: no verdict."""
    lp_pass, lp_fail = (list(logprobs) + [None, None])[:2] if logprobs is not None else (None, None)
    if lp_pass is None and lp_fail is None:
        return None
    if lp_fail is None or (lp_pass is not None and lp_pass > lp_fail):
        return "PASS"
    if lp_pass is None or lp_fail > lp_pass:
        return "FAIL"
    return None


# ---- item rows ----

def combine(item: dict[str, Any], answers: Iterable[dict[str, Any]], kind: str,
            options: Mapping[str, Any] | None = None, verdict: str = "text") -> list[dict[str, Any]]:
    """One prediction row per run.

    `prediction` is always the verdict parsed from the text (the paper's protocol: reasoning, then verdict);
    `logprob_prediction` is the verdict-first log-prob reading (None for API models). `correct` scores the
    path `verdict` names ("text" or "logprob"); an ERROR or missing verdict counts as wrong. A failed request
    (e.g. context overflow) or a missing prompt template makes an error row with `correct` None.
    """
    if verdict not in ("text", "logprob"):
        raise ValueError(f"verdict must be 'text' or 'logprob', not {verdict!r}")
    opts = settings(options)
    by_variant = {a["variant"]: a for a in answers}
    has_template = bool(opts["templates"].get(item["task"], {}).get(item["language"]))
    rows = []
    for run in range(int(opts["runs"])):
        answer = by_variant.get(f"run{run}")
        row: dict[str, Any] = {
            "item_id": item["item_id"], "benchmark": BENCHMARK, "split": item["split"], "task": item["task"],
            "subset": item["subset"], "language": item["language"], "type": item.get("type") or "", "run": run,
            "label": item["label"], "verdict": verdict, "prediction": None, "logprob_prediction": None,
            "reasoning": None, "text": None, "correct": None, "text_correct": None, "logprob_correct": None,
            "truncated": bool(answer and answer.get("truncated")),
            "n_tokens": int((answer or {}).get("n_tokens") or 0), "error": None,
        }
        if not has_template:
            row["error"] = (f"no prompt template for ({item['task']}, {item['language']}): "
                            f"options.templates.{item['task']}.{item['language']} missing")
        elif answer is None:
            row["error"] = f"no answer for request run{run}"
        elif answer.get("error"):
            row["error"] = str(answer["error"])
        else:
            text = answer.get("text")
            row.update(text=text, prediction=parse_verdict(text), reasoning=parse_reasoning(text),
                       logprob_prediction=logprob_verdict(answer.get("candidate_logprobs")))
            row["text_correct"] = 1.0 if row["prediction"] == item["label"] else 0.0
            if row["logprob_prediction"] is not None:
                row["logprob_correct"] = 1.0 if row["logprob_prediction"] == item["label"] else 0.0
            row["correct"] = row["text_correct"] if verdict == "text" else (row["logprob_correct"] or 0.0)
        rows.append(row)
    return rows


def ensemble(rows_by_model: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Majority vote of several judges per item, as rows in the prediction schema (model "ensemble(a,b,c)").

    Each judge's vote on an item is the majority of its runs' text verdicts (`prediction`); ERROR verdicts and
    failed rows do not vote, and a tie between PASS and FAIL runs makes the judge abstain. The ensemble's
    verdict is the majority of the judges' votes; a tie goes to the vote of the first judge in
    `rows_by_model` order that voted (order them by priority, as the paper's GPT-4o > Qwen2.5-72B >
    GPT-4o-mini). No vote at all gives ERROR (counted wrong); an item whose every row failed gives an error row.
    """
    name = f"ensemble({','.join(rows_by_model)})"
    by_item: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for model, rows in rows_by_model.items():
        for row in rows:
            by_item[row["item_id"]][model].append(row)
    out = []
    for item_id in sorted(by_item):
        judged = by_item[item_id]
        rows = [r for model in rows_by_model for r in judged.get(model, [])]
        first = rows[0]
        votes = {model: _majority(r.get("prediction") for r in judged.get(model, []) if not r.get("error"))
                 for model in rows_by_model}
        labels = {LABELS.get(str(r.get("label") or "").strip().upper()) for r in rows} - {None}
        row: dict[str, Any] = {
            "item_id": item_id, "benchmark": BENCHMARK, "model": name, "split": split_of(first),
            "task": task_name(first.get("task")) or first.get("task"), "subset": first.get("subset") or "",
            "language": language_of(first), "type": first.get("type") or "", "run": 0,
            "label": labels.pop() if len(labels) == 1 else None, "verdict": "text",
            "votes": "; ".join(f"{model}={vote or '-'}" for model, vote in votes.items()),
            "prediction": None, "logprob_prediction": None, "reasoning": None, "text": None, "correct": None,
            "text_correct": None, "logprob_correct": None, "error": None,
        }
        cast = [vote for vote in votes.values() if vote]
        if all(r.get("error") for r in rows):
            row["error"] = "every judge's rows for this item failed"
        elif row["label"] is None:
            row["error"] = "the judges' rows give no gold label, or different ones"
        else:
            counts = Counter(cast)
            if not cast:
                row["prediction"] = "ERROR"
            elif counts["PASS"] != counts["FAIL"]:
                row["prediction"] = counts.most_common(1)[0][0]
            else:
                row["prediction"] = cast[0]
            row["correct"] = row["text_correct"] = 1.0 if row["prediction"] == row["label"] else 0.0
        out.append(row)
    return out


def _majority(verdicts: Iterable[str | None]) -> str | None:
    counts = Counter(v for v in verdicts if v in ("PASS", "FAIL"))
    if counts["PASS"] == counts["FAIL"]:
        return None
    return "PASS" if counts["PASS"] > counts["FAIL"] else "FAIL"


# ---- aggregation ----

def split_of(row: dict[str, Any]) -> str:
    """A row's split: its `split`, else the one in its item id (bianbench/<split>/<id>)."""
    if row.get("split"):
        return str(row["split"]).lower()
    parts = str(row.get("item_id", "")).split("/")
    return parts[1].lower() if len(parts) >= 3 and parts[0] == BENCHMARK else ""


def language_of(row: dict[str, Any]) -> str:
    """A row's language: its `language`, else its split's (en, zh), else its label's spelling (CF)."""
    if row.get("language"):
        return str(row["language"]).lower()
    split = split_of(row)
    if split in LANGUAGES:
        return split
    label = str(row.get("label") or "").strip()
    return "zh" if label in ("通过", "失败") else "en" if label.upper() in ("PASS", "FAIL") else ""


def group_key(row: dict[str, Any]) -> str:
    """split|language|task|subset: everything the tables average over (language tells CF EN from CF ZH)."""
    task = task_name(row.get("task")) or str(row.get("task") or "")
    return "|".join((split_of(row), language_of(row), task, str(row.get("subset") or "")))


def row_key(row: dict[str, Any]) -> str:
    """item id and run: each run of an item is its own value."""
    return f"{row['item_id']}#{int(row.get('run') or 0)}"


def measures(row: dict[str, Any]) -> dict[str, float | None]:
    """What the reducer tracks per row; None: the row does not count for it. Only `correct` is needed."""
    failed = bool(row.get("error"))
    correct = None if failed else row.get("correct")
    label = LABELS.get(str(row.get("label") or "").strip().upper())
    prediction = row.get("prediction")
    return {
        "correct": correct,
        "failed": 1.0 if failed else 0.0,
        "unparsed": None if failed or prediction is None else float(prediction == "ERROR"),
        "pass_recall": correct if label == "PASS" else None,
        "fail_recall": correct if label == "FAIL" else None,
        "text_correct": None if failed else row.get("text_correct"),
        "logprob_correct": None if failed else row.get("logprob_correct"),
    }


# metrics.json names of the secondary measures, averaged like accuracy.
RATES = {"pass_recall": "pass_recall", "fail_recall": "fail_recall", "unparsed": "error_rate",
         "text_correct": "text_accuracy", "logprob_correct": "logprob_accuracy", "failed": "failed_rate"}

Runs = dict[int, dict[str, float]]  # run -> item id -> value


def summarize(groups: dict[str, dict[str, list[tuple[str, float]]]], resamples: int = 1000) -> dict[str, Any]:
    """metrics.json: per split, subset and task accuracies and the split's Avg., each the mean over runs.

    Per run: subset accuracy = mean over its rows; task = mean of its subsets; split avg = mean of all the
    split's subsets (languages.<lang>: the same over one language's subsets, Table 3). Then mean and sample
    standard deviation over runs (None with one run). The other rates (PASS/FAIL recall, ERROR rate, text
    and log-prob accuracy, failed rows) are averaged the same way. ci95: items resampled, each item's value
    being its mean over runs.
    """
    values: dict[str, dict[tuple[str, ...], Runs]] = {}
    for measure, by_group in groups.items():
        for key, pairs in by_group.items():
            runs = values.setdefault(measure, {}).setdefault(tuple(key.split("|", 3)), {})
            for item_run, value in pairs:
                item_id, _, run = item_run.rpartition("#")
                runs.setdefault(int(run), {})[item_id] = value
    correct = values.get("correct", {})
    keys = sorted(set().union(*(v.keys() for v in values.values())) if values else set())
    all_runs = sorted({run for runs in correct.values() for run in runs})
    metrics: dict[str, Any] = {
        "benchmark": BENCHMARK,
        "n": sum(len(items) for runs in correct.values() for items in runs.values()),
        "n_items": len({item for runs in correct.values() for items in runs.values() for item in items}),
        "n_errors": int(sum(v for runs in values.get("failed", {}).values() for items in runs.values()
                            for v in items.values())),
        "runs": all_runs,
        "averaging": "per run: task = mean of its subsets' accuracies, avg = mean of all the split's subsets; "
                     "then mean and sample std over runs",
        "splits": {},
    }
    for split in _ordered(SPLITS, {k[0] for k in keys}):
        split_keys = [k for k in keys if k[0] == split]
        metrics["splits"][split] = _split_metrics(split, split_keys, values, resamples)
    return metrics


def _split_metrics(split: str, keys: list[tuple[str, ...]], values: dict[str, dict[tuple[str, ...], Runs]],
                   resamples: int) -> dict[str, Any]:
    correct = values.get("correct", {})
    avg = _macro(correct, keys)
    out: dict[str, Any] = {"avg": avg["mean"], "avg_std": avg["std"], "avg_by_run": avg["by_run"],
                           "tasks": {}, "tasks_std": {}, "languages": {}, "subsets": {}}
    for task in _ordered(TASKS, {k[2] for k in keys}):
        result = _macro(correct, [k for k in keys if k[2] == task])
        out["tasks"][task], out["tasks_std"][task] = result["mean"], result["std"]
    for language in _ordered(LANGUAGES, {k[1] for k in keys}):
        result = _macro(correct, [k for k in keys if k[1] == language])
        out["languages"][language or "?"] = {"avg": result["mean"], "std": result["std"]}
    for measure, name in RATES.items():
        out[name] = _macro(values.get(measure, {}), keys)["mean"]
    out["n"] = sum(len(items) for k in keys for items in correct.get(k, {}).values())
    out["n_errors"] = int(sum(v for k in keys for items in values.get("failed", {}).get(k, {}).values()
                              for v in items.values()))
    names = Counter(k[3] for k in keys)
    for key in keys:
        _, language, task, subset = key
        runs = correct.get(key, {})
        result = _macro(correct, [key])
        per_item: dict[str, list[float]] = defaultdict(list)
        for items in runs.values():
            for item_id, value in items.items():
                per_item[item_id].append(value)
        item_means = [sum(v) / len(v) for _, v in sorted(per_item.items())]
        entry = {"task": task, "language": language, "accuracy": result["mean"], "std": result["std"],
                 "by_run": result["by_run"], "n": len(per_item), "n_rows": sum(len(i) for i in runs.values()),
                 "ci95": bootstrap_ci(item_means, f"{BENCHMARK}/{'/'.join(key)}", resamples)}
        entry.update({name: _macro(values.get(measure, {}), [key])["mean"] for measure, name in RATES.items()})
        out["subsets"][subset if names[subset] == 1 else f"{subset} ({language} {task})"] = entry
    return out


def _macro(runs_by_key: dict[tuple[str, ...], Runs], keys: list[tuple[str, ...]]) -> dict[str, Any]:
    """Per run, the mean over `keys` of each key's mean; then mean and sample std of those over runs."""
    by_run: dict[str, float] = {}
    for run in sorted({run for key in keys for run in runs_by_key.get(key, {})}):
        means = [_mean(list(runs_by_key[key][run].values())) for key in keys
                 if run in runs_by_key.get(key, {}) and runs_by_key[key][run]]
        if means:
            by_run[f"run{run}"] = sum(means) / len(means)
    per_run = list(by_run.values())
    return {"mean": _mean(per_run), "std": statistics.stdev(per_run) if len(per_run) > 1 else None,
            "by_run": by_run}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _ordered(known: tuple[str, ...], present: set[str]) -> list[str]:
    """`present` in the paper's order, unknown names after, sorted."""
    return [k for k in known if k in present] + sorted(present - set(known))


# ---- tables ----

def table_text(metrics: list[dict[str, Any]]) -> str:
    """Tables 2, 3, 17 and 18 of the paper from metrics.json dicts, one row per model: accuracy (%), mean ±
    sample std over runs in Tables 2 and 3, the mean in the subset tables; '-' where a model has no data."""
    sections = [("Bi'anBench: accuracy %, mean ± std over runs. Task = mean of its subsets; Avg. = mean of all "
                 "the split's subsets (not of the tasks).")]
    for split, table in (("en", "Table 2, Bi'anBench_EN"), ("zh", "Table 2, Bi'anBench_ZH")):
        header = [TASK_TITLES[t] for t in TABLE2_TASKS[split]] + ["Avg."]
        rows = []
        for m in metrics:
            s = m.get("splits", {}).get(split)
            cells = [_pm(s["tasks"].get(t), s["tasks_std"].get(t)) if s else "-" for t in TABLE2_TASKS[split]]
            rows.append([_model(m)] + cells + [_pm(s["avg"], s["avg_std"]) if s else "-"])
        sections.append(grid(table, ["Model"] + header, rows))
    cf_rows = []
    for m in metrics:
        languages = m.get("splits", {}).get("cf", {}).get("languages", {})
        cf_rows.append([_model(m)] + [_pm(languages[lang]["avg"], languages[lang]["std"]) if lang in languages
                                      else "-" for lang in LANGUAGES])
    sections.append(grid("Table 3, Bi'anBench_CF", ["Model", "EN", "ZH"], cf_rows))
    splits = _ordered(SPLITS, {s for m in metrics for s in m.get("splits", {})})
    titles = {"en": "Table 17, Bi'anBench_EN subsets", "zh": "Table 18, Bi'anBench_ZH subsets"}
    for split in splits:
        subsets = _subset_columns(split, [m.get("splits", {}).get(split, {}).get("subsets", {}) for m in metrics])
        rows = []
        for m in metrics:
            s = m.get("splits", {}).get(split)
            rows.append([_model(m)] + [_pct(s["subsets"][c]["accuracy"]) if s and c in s["subsets"] else "-"
                                       for c in subsets] + [_pct(s["avg"]) if s else "-"])
        sections.append(grid(titles.get(split, f"Bi'anBench_{split.upper()} subsets"),
                              ["Model"] + subsets + ["Average"], rows))
    for name, title in (("error_rate", "ERROR rate (verdict not parsed from the text, % of scored rows)"),
                        ("text_accuracy", "Accuracy of the verdict parsed from the text (paper protocol)"),
                        ("logprob_accuracy", "Accuracy of the log-prob verdict (read before the reasoning)")):
        rows = [[_model(m)] + [_pct(m["splits"][s].get(name)) if s in m.get("splits", {}) else "-"
                               for s in splits] for m in metrics]
        sections.append(grid(title, ["Model"] + [s.upper() for s in splits], rows))
    return "\n\n".join(sections)


def _subset_columns(split: str, subset_maps: list[dict[str, Any]]) -> list[str]:
    """Subsets of a split in the paper's order (names matched ignoring case), then the others by task and name."""
    present = {name: entry.get("task", "") for subsets in subset_maps for name, entry in subsets.items()}
    order = [s for task in PAPER_SUBSETS.get(split, {}).values() for s in task]
    rank = {name.lower(): i for i, name in enumerate(order)}
    task_rank = {t: i for i, t in enumerate(TASKS)}
    return sorted(present, key=lambda s: (rank.get(s.lower(), len(order)), task_rank.get(present[s], len(TASKS)), s))


def _model(m: dict[str, Any]) -> str:
    return str(m.get("model") or "?")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _pm(mean: float | None, std: float | None) -> str:
    return _pct(mean) if mean is None or std is None else f"{100 * mean:.1f} ± {100 * std:.1f}"

