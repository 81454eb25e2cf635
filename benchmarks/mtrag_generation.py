"""mtRAG generation (seeds/mtrag.txt sections 6-8, Appendices D, F, I; rules in PROTOCOLS.md 3).

A task is a conversation up to a user question, with reference passages and a reference answer. A generator
answers it from the passages of a retrieval setting (Reference: the task's own passages, none when it is
unanswerable; Reference+RAG: those plus the top retrieved ones up to `top_k`; Full RAG: the top `top_k`
retrieved), with the Appendix D.2 prompt. LLM judges then score the response: RB_llm (Figure 6, the median
over `judges.rb_llm`), the IDK judge (Figure 8) and RAGAS faithfulness RL_F (statements, then a verdict per
statement). RougeL is computed here; Bert-Rec, Bert-KPrec and so RB_alg need an encoder: the pipeline's
encoder stage (actors.bertscore, settings in `options.bertscore`) scores the pairs `text_pairs` names and
`add_text_pair_scores` writes them into the row; without the stage they are None.

Rounds. Generating and judging are separate model calls whose prompts depend on earlier answers:
  round 0  expand(item)            -> the generation request (variant "generation"); with
                                      `responses: given`, the response is the task's predictions[0] and
                                      round 0 is already round 1's judge requests.
  round 1  followup(item, answers) -> judge requests on the response: "rb_llm" (one per RB_llm judge),
                                      "idk" and "statements".
  round 2  followup(item, answers) -> "verdicts": the statements judged against the passages, once the
                                      statements answer parsed to at least one statement.
  then     followup(item, answers) -> [], and combine(item, all answers) writes the task's row.
`followup` returns every request the answers so far make possible that is not answered yet, so it is safe to
call again after a resume (stored answers are not asked again). A pipeline loops: answer expand's requests,
then while followup returns requests for some item, answer those. A failed generation gives no judge
requests; a failed judge request is answered (with its error) and not asked again.

Every request has `route`: "self" (the cell's model answers it: the generator, or, with responses given, the
judge under evaluation) or the name of a judge model from `options.judges`, which the pipeline sends it to
(a shared judge deployment serves every generator cell). Every request has max_tokens; all are greedy.

One prediction row per task (`combine`); tasks outside `task_ids` or over `max_reference_passages` have no
requests and no row. `correct` is answerability correctness (IDK = yes exactly when the task is unanswerable
or conversational; None for UNDERSPECIFIED or an unknown IDK label), the paper's Ans. Acc. per task.
"""
from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from benchmarks.mtrag.metrics import (
    ANSWERABILITY,
    answerability_correct,
    condition_on_idk,
    faithfulness,
    idk_word,
    max_kprec,
    median_rating,
    parse_idk,
    parse_rating,
    parse_statement_verdicts,
    parse_statements,
    rb_alg,
    rouge_l,
)
from benchmarks.mtrag.retrieval import domain, read_run, task_id
from benchmarks.options import is_int, is_number, plain, unknown_keys
from benchmarks.records import read_items
from benchmarks.stats import bootstrap_ci
from benchmarks.tables import grid

BENCHMARK = "mtrag_generation"
KINDS = ("generative",)
PROJECT_ROOT = Path(__file__).resolve().parent.parent
SETTINGS = ("reference", "reference_rag", "full_rag")
SETTING_TITLES = {"reference": "Reference", "reference_rag": "Reference+RAG", "full_rag": "Full RAG"}
GENERATION, RB_LLM, IDK, STATEMENTS, VERDICTS = "generation", "rb_llm", "idk", "statements", "verdicts"
VARIANTS = (GENERATION, RB_LLM, IDK, STATEMENTS, VERDICTS)
SELF = "self"
# The paper's tables cover these; CONVERSATIONAL tasks were left out of its experiments (section 6.3.3) and
# UNDERSPECIFIED is MTRAG-UN's: both are reported per answerability only.
PAPER_CLASSES = ("ANSWERABLE", "PARTIAL", "UNANSWERABLE")
# Placeholders each prompt must use (and may only use).
PLACEHOLDERS = {
    "generation": {"passages"},
    "passage": {"number", "text"},
    RB_LLM: {"previous_conversation", "current_question", "reference_answer", "response", "passages"},
    IDK: {"inquiry", "response"},
    STATEMENTS: {"question", "answer"},
    VERDICTS: {"context", "statements"},
}
DEFAULTS: dict[str, Any] = {
    "setting": "reference",
    "responses": "generate",  # or "given": score the task's predictions[0], generate nothing
    "retrieved_file": None,  # RAG settings: a run in the official task format; else each task's retrieved_contexts
    "top_k": 5,  # passages in the RAG settings
    "max_reference_passages": None,  # e.g. 2: only tasks with at most 2 reference passages (the paper's 426)
    "task_ids": None,  # only these tasks
    "judges": {RB_LLM: [SELF], IDK: SELF, "ragas": SELF},
    "prompt_role": "system",  # where the D.2 instruction and passages go: a system message, or the first user turn
    "max_tokens": {GENERATION: 512, RB_LLM: 1024, IDK: 16, STATEMENTS: 1024, VERDICTS: 2048},
    "prompts_file": "conf/prompts/mtrag_generation.yaml",  # relative to the project root
    "prompts": {},  # overrides of the file's entries
    # The encoder of Bert-Rec / Bert-KPrec (actors.bertscore); the authors': deberta-xlarge-mnli layer 40,
    # rescaled with bert-score's baseline. null: no encoder stage (RB_alg stays empty).
    "bertscore": {"model": "microsoft/deberta-xlarge-mnli", "num_layers": 40, "lang": "en",
                  "rescale_with_baseline": True, "baseline_path": None, "batch_size": 64, "actors": 1,
                  "num_cpus": 1, "num_gpus": 0},
}
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_ROUTE = re.compile(r"^[A-Za-z0-9_.:/\-]+$")  # a model name; no '#', '@' or spaces (they build request ids)
GROUP_FIELDS = ("setting", "answerability", "turn_group", "collection", "question_type", "multi_turn")
NA = "N/A"
_BREAKDOWN_ORDER = {"by_answerability": ANSWERABILITY, "by_turn": ("first", "later"),  # the paper's order
                    "by_domain": ("clapnq", "fiqa", "govt", "cloud")}


@dataclass(frozen=True)
class Settings:
    setting: str
    responses: str
    retrieved_file: str | None
    top_k: int
    max_reference_passages: int | None
    task_ids: frozenset[str] | None
    rb_llm_judges: tuple[str, ...]
    idk_judge: str
    ragas_judge: str
    prompt_role: str
    max_tokens: dict[str, int]
    prompts: dict[str, str]


# ---- options


def check_options(options: Mapping[str, Any] | None) -> list[str]:
    """Problems with a config's options, each naming its key; [] when they are fine."""
    options = plain(options or {})
    if not isinstance(options, dict):
        return ["options: expected a mapping"]
    problems = unknown_keys(options, DEFAULTS, "options")
    values = {**DEFAULTS, **options}
    choices = {"setting": SETTINGS, "responses": ("generate", "given"), "prompt_role": ("system", "user")}
    problems += [f"options.{key}: {values[key]!r} is not one of {', '.join(allowed)}"
                 for key, allowed in choices.items() if values[key] not in allowed]
    if not (is_int(values["top_k"]) and values["top_k"] >= 1):
        problems.append("options.top_k: expected an integer >= 1")
    limit = values["max_reference_passages"]
    if limit is not None and not (is_int(limit) and limit >= 0):
        problems.append("options.max_reference_passages: expected an integer >= 0 or null")
    ids = values["task_ids"]
    if ids is not None and (not isinstance(ids, list) or not ids
                            or not all(isinstance(i, str) and i.strip() for i in ids)):
        problems.append("options.task_ids: expected a non-empty list of task ids, or null")
    if not isinstance(values["prompts"], dict):
        problems.append("options.prompts: expected a mapping <prompt>: <text>")
    problems += _judge_problems(values["judges"])
    problems += _bertscore_problems(values["bertscore"])
    problems += _max_tokens_problems(values["max_tokens"])
    for key in ("retrieved_file", "prompts_file"):
        path = values[key]
        if path is not None and not isinstance(path, str):
            problems.append(f"options.{key}: expected a path or null")
        elif path is not None and not _full_path(path).is_file():
            problems.append(f"options.{key}: {_full_path(path)} is not a file")
    if problems:
        return problems
    try:
        prompts = _prompts(values["prompts_file"], values["prompts"])
    except ValueError as e:
        return [str(e)]
    return _prompt_problems(prompts)


def _judge_problems(judges: Any) -> list[str]:
    if not isinstance(judges, dict):
        return ["options.judges: expected a mapping {rb_llm: [names], idk: name, ragas: name}"]
    problems = unknown_keys(judges, DEFAULTS["judges"], "options.judges")
    merged = {**DEFAULTS["judges"], **judges}
    names = merged[RB_LLM]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and _ROUTE.match(n) for n in names):
        problems.append(f"options.judges.{RB_LLM}: expected a non-empty list of model names ('{SELF}': the cell's "
                        "model)")
    elif len(set(names)) != len(names):
        problems.append(f"options.judges.{RB_LLM}: a judge is listed twice")
    for key in (IDK, "ragas"):
        if not isinstance(merged[key], str) or not _ROUTE.match(merged[key]):
            problems.append(f"options.judges.{key}: expected a model name ('{SELF}': the cell's model)")
    return problems


def _bertscore_problems(encoder: Any) -> list[str]:
    if encoder is None:
        return []
    if not isinstance(encoder, dict):
        return ["options.bertscore: expected a mapping (model, num_layers, ...) or null"]
    known = DEFAULTS["bertscore"]
    problems = unknown_keys(encoder, known, "options.bertscore")
    values = {**known, **encoder}
    for key in ("model", "lang"):
        if not isinstance(values[key], str) or not values[key].strip():
            problems.append(f"options.bertscore.{key}: expected text")
    for key, least in (("num_layers", 1), ("batch_size", 1), ("actors", 1), ("num_cpus", 0), ("num_gpus", 0)):
        fraction = key in ("num_cpus", "num_gpus")  # Ray resources may be fractions
        if not (is_number(values[key]) and values[key] >= least and (fraction or is_int(values[key]))):
            problems.append(f"options.bertscore.{key}: expected {'a number' if fraction else 'an integer'}"
                            f" >= {least}")
    if not isinstance(values["rescale_with_baseline"], bool):
        problems.append("options.bertscore.rescale_with_baseline: expected true or false")
    path = values["baseline_path"]
    if path is not None and not (isinstance(path, str) and _full_path(path).is_file()):
        problems.append(f"options.bertscore.baseline_path: {path!r} is not a file")
    return problems


def routes(options: Mapping[str, Any] | None = None) -> list[str]:
    """The judge models the requests go to besides the cell's own, in the order first named."""
    s = settings(options)
    return [name for name in dict.fromkeys((*s.rb_llm_judges, s.idk_judge, s.ragas_judge)) if name != SELF]


def text_pair_encoder(options: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The encoder stage's settings (defaults filled in, baseline_path made absolute); None: no stage."""
    encoder = {**DEFAULTS, **plain(options or {})}["bertscore"]
    if encoder is None:
        return None
    values = {**DEFAULTS["bertscore"], **encoder}
    if values["baseline_path"]:
        values["baseline_path"] = str(_full_path(values["baseline_path"]))
    return values


def _max_tokens_problems(max_tokens: Any) -> list[str]:
    if not isinstance(max_tokens, dict):
        return [f"options.max_tokens: expected a mapping with keys among {', '.join(VARIANTS)}"]
    problems = unknown_keys(max_tokens, VARIANTS, "options.max_tokens")
    return problems + [f"options.max_tokens.{key}: expected an integer >= 1" for key, value in max_tokens.items()
                       if key in VARIANTS and not (is_int(value) and value >= 1)]


def _prompt_problems(prompts: Mapping[str, Any]) -> list[str]:
    problems = []
    for key, wanted in PLACEHOLDERS.items():
        template = prompts.get(key)
        if not isinstance(template, str) or not template.strip():
            problems.append(f"options.prompts.{key}: missing or not text")
            continue
        names = set(_PLACEHOLDER.findall(template))
        problems += [f"options.prompts.{key}: placeholder {{{n}}} missing" for n in sorted(wanted - names)]
        problems += [f"options.prompts.{key}: unknown placeholder {{{n}}} (known: "
                     f"{', '.join('{' + w + '}' for w in sorted(wanted))})" for n in sorted(names - wanted)]
    return problems + [f"options.prompts.{key}: unknown prompt (known: {', '.join(PLACEHOLDERS)})"
                       for key in prompts if key not in PLACEHOLDERS]


def settings(options: Mapping[str, Any] | None = None) -> Settings:
    """The validated settings of a config's options, defaults filled in; ValueError naming every problem."""
    return _settings(json.dumps(plain(options or {}), sort_keys=True))


@functools.lru_cache(maxsize=32)
def _settings(options_json: str) -> Settings:
    options = json.loads(options_json)
    problems = check_options(options)
    if problems:
        raise ValueError("; ".join(problems))
    values = {**DEFAULTS, **options}
    judges = {**DEFAULTS["judges"], **values["judges"]}
    ids = values["task_ids"]
    return Settings(
        setting=values["setting"], responses=values["responses"], retrieved_file=values["retrieved_file"],
        top_k=values["top_k"], max_reference_passages=values["max_reference_passages"],
        task_ids=None if ids is None else frozenset(task_id(i.strip()) for i in ids),
        rb_llm_judges=tuple(judges[RB_LLM]), idk_judge=judges[IDK], ragas_judge=judges["ragas"],
        prompt_role=values["prompt_role"], max_tokens={**DEFAULTS["max_tokens"], **values["max_tokens"]},
        prompts=_prompts(values["prompts_file"], values["prompts"]))


def _prompts(prompts_file: str | None, overrides: dict[str, Any]) -> dict[str, str]:
    return {**(_prompts_file(prompts_file) if prompts_file else {}), **overrides}


@functools.lru_cache(maxsize=8)
def _prompts_file(path: str) -> dict[str, str]:
    """A prompt file's entries, read once per process (expand and combine run once per item)."""
    full = _full_path(path)
    try:
        loaded = yaml.safe_load(full.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ValueError(f"options.prompts_file: cannot read {full}: {e}") from None
    if isinstance(loaded, dict):
        return loaded
    raise ValueError(f"options.prompts_file: {full} is not a mapping <prompt>: <text>")


def _full_path(path: str) -> Path:
    return Path(path) if os.path.isabs(path) else PROJECT_ROOT / path


# ---- loading


def load_items(path: str) -> Iterator[dict[str, Any]]:
    """Tasks in the official generation-task format (JSONL/JSON/Parquet, or a folder of them); bad rows come
    out as error items, in place, naming file, row and field.

    Read per task: task_id (both id spellings), Collection (or collection; long or short names), input turns
    (speaker user/agent, text; the last one the user's), contexts (text; document_id, title), targets[0].text
    (the reference answer), answerability, Question Type and Multi-Turn (top level, else the last turn's
    enrichments; a missing type reads "N/A"), turn (else counted from the input), optional predictions[0].text
    (responses-given mode) and optional retrieved_contexts (passages for the RAG settings, best first).
    """
    for record, item, problem in read_items(path, lambda r: _read_row(r.data), "field 'task_id': duplicate of {}"):
        yield item if problem is None else _error_item(record.source, record.row, item.get("subset", ""), problem)


def _read_row(row: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """One row's item fields and what is wrong with it (each problem names its field)."""
    problems: list[str] = []
    raw_id = row.get("task_id")
    tid = task_id(raw_id.strip()) if isinstance(raw_id, str) and raw_id.strip() else ""
    if not tid:
        problems.append("field 'task_id' missing or not text")
    collection = row.get("Collection", row.get("collection"))
    domain_name = ""
    try:
        domain_name = domain(collection) if isinstance(collection, str) else ""
        if not domain_name:
            problems.append("field 'Collection' missing or not text")
    except ValueError as e:
        problems.append(f"field 'Collection': {e}")
    turns = _turns(row.get("input"), problems)
    enrichments = _last_enrichments(row.get("input"))
    labels = _labels(row, enrichments, "answerability")
    answerability = labels[0].upper() if labels else ""
    if not labels:
        problems.append("field 'answerability' missing (top level or the last turn's enrichments)")
    elif answerability not in ANSWERABILITY:
        problems.append(f"field 'answerability': {labels[0]!r} is not one of {', '.join(ANSWERABILITY)}")
    number = _turn_number(row.get("turn"), turns, problems)
    reference = _first_text(row.get("targets"), "targets", problems, required=True)
    prediction = _first_text(row.get("predictions"), "predictions", problems, required=False)
    item = {
        "item_id": f"{BENCHMARK}/{tid}", "benchmark": BENCHMARK, "subset": answerability, "task_id": tid,
        "conversation_id": row.get("conversation_id") if isinstance(row.get("conversation_id"), str) else "",
        "collection": domain_name, "answerability": answerability,
        "question_type": "+".join(sorted(_labels(row, enrichments, "Question Type"))) or NA,
        "multi_turn": "+".join(sorted(_labels(row, enrichments, "Multi-Turn"))) or NA,
        "turn": number, "turn_group": "first" if number == 1 else "later", "turns": turns,
        "passages": _passages_field(row.get("contexts"), "contexts", problems, required=True),
        "retrieved": _passages_field(row.get("retrieved_contexts"), "retrieved_contexts", problems, required=False),
        "reference": reference, "prediction": prediction,
    }
    return item, problems


def _turns(value: Any, problems: list[str]) -> list[dict[str, str]]:
    if not isinstance(value, list) or not value:
        problems.append("field 'input' missing or not a non-empty list of turns")
        return []
    turns = []
    for i, t in enumerate(value):
        if not isinstance(t, dict) or t.get("speaker") not in ("user", "agent"):
            problems.append(f"field 'input[{i}].speaker' is not user or agent")
        elif not isinstance(t.get("text"), str):
            problems.append(f"field 'input[{i}].text' missing or not text")
        else:
            turns.append({"speaker": t["speaker"], "text": t["text"]})
    if len(turns) == len(value) and (turns[-1]["speaker"] != "user" or not turns[-1]["text"].strip()):
        problems.append(f"field 'input[{len(value) - 1}]': the last turn must be the user's question")
    return turns


def _last_enrichments(value: Any) -> dict[str, Any]:
    if isinstance(value, list) and value and isinstance(value[-1], dict):
        enrichments = value[-1].get("enrichments")
        return enrichments if isinstance(enrichments, dict) else {}
    return {}


def _labels(row: dict[str, Any], enrichments: dict[str, Any], key: str) -> list[str]:
    """A label list at the top level or in the last turn's enrichments (key in any case); a bare string
    counts as a one-element list; NaN (pandas' missing value in the released files) or null as missing."""
    for source in (row, enrichments):
        for name, value in source.items():
            if name.lower() != key.lower():
                continue
            values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
            labels = [v.strip() for v in values if isinstance(v, str) and v.strip()]
            if labels:
                return labels
    return []


def _turn_number(value: Any, turns: list[dict[str, str]], problems: list[str]) -> int:
    counted = sum(1 for t in turns if t["speaker"] == "user")
    if value is None:
        return counted
    if is_int(value) and value >= 1:
        return value
    if isinstance(value, str) and value.strip().isdigit() and int(value) >= 1:
        return int(value)
    problems.append(f"field 'turn': {value!r} is not a turn number")
    return counted


def _first_text(value: Any, field: str, problems: list[str], required: bool) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, list) or not value or not isinstance(value[0], dict) \
            or not isinstance(value[0].get("text"), str) or not value[0]["text"].strip():
        problems.append(f"field '{field}[0].text' missing or not text")
        return None
    return value[0]["text"]


def _passages_field(value: Any, field: str, problems: list[str], required: bool) -> list[dict[str, str]] | None:
    if value is None and not required:
        return None
    if not isinstance(value, list):
        problems.append(f"field '{field}' missing or not a list")
        return []
    passages = []
    for i, p in enumerate(value):
        if not isinstance(p, dict) or not isinstance(p.get("text"), str) or not p["text"].strip():
            problems.append(f"field '{field}[{i}].text' missing or not text")
            continue
        passages.append({"document_id": str(p.get("document_id") or ""), "title": str(p.get("title") or ""),
                         "text": p["text"]})
    return passages


def _error_item(source: str, row: int, subset: str, problem: str) -> dict[str, Any]:
    return {"item_id": f"{BENCHMARK}/{source}:{row}", "benchmark": BENCHMARK, "subset": subset, "source": source,
            "row": row, "error": problem}


# ---- passages of a setting


def selected(item: Mapping[str, Any], options: Mapping[str, Any] | None = None) -> bool:
    """Whether the task is part of the run: in `task_ids` (when given) and within `max_reference_passages`."""
    s = settings(options)
    return (s.task_ids is None or item["task_id"] in s.task_ids) and (
        s.max_reference_passages is None or len(item["passages"]) <= s.max_reference_passages)


def setting_passages(item: Mapping[str, Any], options: Mapping[str, Any] | None = None) -> list[dict[str, str]]:
    """The passages the generator sees in the configured setting, in prompt order; the judges and Bert-KPrec
    use the same ones. ValueError (naming the task and the source) when a RAG setting has no retrieved
    passages for the task, or one without text."""
    s = settings(options)
    if s.setting == "reference":
        return list(item["passages"])
    if s.retrieved_file:
        retrieved = _retrieved_file(s.retrieved_file).get(item["task_id"])
        source = f"options.retrieved_file {s.retrieved_file}"
    else:
        retrieved, source = item.get("retrieved"), "the task's field 'retrieved_contexts'"
    if retrieved is None:
        raise ValueError(f"task {item['task_id']}: setting {s.setting} needs retrieved passages, and {source} "
                         "has none for it")
    if s.setting == "full_rag":
        chosen = retrieved[: s.top_k]
    else:  # reference_rag: the reference passages, then retrieved ones they lack, up to top_k in all
        known = {p["document_id"] for p in item["passages"] if p["document_id"]}
        extra = [p for p in retrieved if not p["document_id"] or p["document_id"] not in known]
        chosen = list(item["passages"]) + extra[: max(0, s.top_k - len(item["passages"]))]
    empty = next((p["document_id"] or "?" for p in chosen if not p["text"].strip()), None)
    if empty is not None:
        raise ValueError(f"task {item['task_id']}: retrieved passage {empty} in {source} has no text")
    return chosen


@functools.lru_cache(maxsize=4)
def _retrieved_file(path: str) -> dict[str, list[dict[str, str]]]:
    """Task id -> retrieved passages of a run file in the official task format, in the order written (a run
    lists each ranking best first); rows the run reader cannot use are skipped (and logged by it)."""
    rows = read_run(str(_full_path(path))).data
    return {task_id(row["task_id"]): [{"document_id": c["document_id"], "title": str(c.get("title") or ""),
                                       "text": str(c.get("text") or "")} for c in row["contexts"]]
            for row in rows}


def check_items(items: Iterable[dict[str, Any]], options: Mapping[str, Any] | None = None) -> list[str]:
    """What the data lacks for these options, found before any engine starts: task ids not in the data,
    responses-given tasks without predictions, RAG-setting tasks without retrieved passages."""
    s = settings(options)
    items = [i for i in items if not i.get("error")]
    problems = []
    if s.task_ids is not None:
        missing = sorted(s.task_ids - {i["task_id"] for i in items})
        if missing:
            problems.append(f"options.task_ids: {len(missing)} task id(s) not in the data, e.g. {missing[0]}")
    chosen = [i for i in items if selected(i, options)]
    if s.responses == "given":
        lacking = [i["task_id"] for i in chosen if i["prediction"] is None]
        if lacking:
            problems.append(f"options.responses: given, but {len(lacking)} task(s) have no predictions[0].text, "
                            f"e.g. {lacking[0]}")
    unusable = []
    for item in chosen:
        try:
            setting_passages(item, options)
        except ValueError as e:
            unusable.append(str(e))
    if unusable:
        problems.append(f"options.setting: {s.setting}: {len(unusable)} task(s) without usable retrieved passages, "
                        f"e.g. {unusable[0]}")
    return problems


# ---- requests


def expand(item: dict[str, Any], kind: str, options: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Round 0: the generation request, or with responses given the judge requests. No requests for a task
    outside the run, or whose passages cannot be had (combine says why)."""
    return _requests(item, {}, options)


def followup(item: dict[str, Any], answers: Iterable[dict[str, Any]], kind: str = "generative",
             options: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The next round: every request the answers so far make possible and that is not answered yet; [] when
    the task needs no more answers."""
    by_id = {a["request_id"]: a for a in answers}
    return [r for r in _requests(item, by_id, options) if r["request_id"] not in by_id]


def _requests(item: dict[str, Any], answers: dict[str, dict[str, Any]],
              options: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    s = settings(options)
    if item.get("error") or not selected(item, options):
        return []
    try:
        passages = setting_passages(item, options)
    except ValueError:
        return []
    requests = []
    if s.responses == "generate":
        requests.append(_request(item, GENERATION, SELF, generation_messages(item, passages, s), s))
    response = _response(item, answers, s)[0]
    if response is None:
        return requests
    for judge in s.rb_llm_judges:
        requests.append(_request(item, RB_LLM, judge, _user(fill(
            s.prompts[RB_LLM], previous_conversation=conversation(item["turns"][:-1]),
            current_question=item["turns"][-1]["text"].strip(), reference_answer=item["reference"],
            response=response, passages="\n\n".join(p["text"] for p in passages))), s))
    requests.append(_request(item, IDK, s.idk_judge, _user(fill(s.prompts[IDK], inquiry=conversation(item["turns"]),
                                                                response=response)), s))
    requests.append(_request(item, STATEMENTS, s.ragas_judge, _user(fill(
        s.prompts[STATEMENTS], question=conversation(item["turns"]), answer=response)), s))
    extracted = answers.get(request_id(item, STATEMENTS, s.ragas_judge))
    statements = parse_statements(extracted["text"]) if extracted and not extracted.get("error") else None
    if statements:
        requests.append(_request(item, VERDICTS, s.ragas_judge, _user(fill(
            s.prompts[VERDICTS], context="\n".join(p["text"] for p in passages),
            statements=json.dumps(statements, ensure_ascii=False))), s))
    return requests


def request_id(item: Mapping[str, Any], variant: str, route: str = SELF) -> str:
    """<item id>#generation, or <item id>#<judge variant>@<judge>: deterministic, one per judge."""
    return f"{item['item_id']}#{variant}" if variant == GENERATION else f"{item['item_id']}#{variant}@{route}"


def _request(item: Mapping[str, Any], variant: str, route: str, messages: list[dict[str, str]],
             s: Settings) -> dict[str, Any]:
    return {"request_id": request_id(item, variant, route), "item_id": item["item_id"], "subset": item["subset"],
            "variant": variant, "route": route, "messages": messages, "max_tokens": s.max_tokens[variant]}


def generation_messages(item: Mapping[str, Any], passages: Sequence[Mapping[str, str]],
                        s: Settings) -> list[dict[str, str]]:
    """Appendix D.2: the instruction and PASSAGE 1..M, then the conversation's turns as chat messages."""
    shown = "\n\n".join(fill(s.prompts["passage"], number=str(i), text=p["text"].strip())
                        for i, p in enumerate(passages, 1))
    head = fill(s.prompts["generation"], passages=shown).strip()
    turns = [{"role": "user" if t["speaker"] == "user" else "assistant", "content": t["text"]} for t in item["turns"]]
    if s.prompt_role == "system":
        return [{"role": "system", "content": head}] + turns
    if turns[0]["role"] == "user":
        return [{"role": "user", "content": f"{head}\n\n{turns[0]['content']}"}] + turns[1:]
    return [{"role": "user", "content": head}] + turns


def conversation(turns: Iterable[Mapping[str, str]]) -> str:
    """Turns as "speaker: text" lines, as the authors' judge script writes the inquiry."""
    return "\n".join(f"{t['speaker']}: {t['text']}" for t in turns)


def fill(template: str, **values: str) -> str:
    """The template with its placeholders filled in one pass; braces that name no value stay as they are."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def _user(content: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": content}]


def _response(item: Mapping[str, Any], answers: Mapping[str, dict[str, Any]],
              s: Settings) -> tuple[str | None, str | None, bool]:
    """(response, why there is none, truncated): the generated text, or predictions[0] with responses given."""
    if s.responses == "given":
        text = item.get("prediction")
        if text:
            return text.strip(), None, False
        return None, "responses: given, but the task has no predictions[0].text", False
    answer = answers.get(request_id(item, GENERATION))
    if answer is None:
        return None, "the generation request has no answer", False
    if answer.get("error") or answer.get("text") is None:
        return None, f"generation failed: {answer.get('error') or 'no text'}", bool(answer.get("truncated"))
    return answer["text"].strip(), None, bool(answer.get("truncated"))


# ---- rows


def combine(item: dict[str, Any], answers: Iterable[dict[str, Any]], kind: str,
            options: Mapping[str, Any] | None = None, verdict: str = "text") -> list[dict[str, Any]]:
    """The task's prediction row (a one-row list), or [] for a task outside the run.

    Every judgment is read from text (`verdict` is accepted for the pipeline's sake and has no other reading).
    A failed judge request leaves its metric None and is named in `judge_errors`; the row fails (`error`) only
    when there is no response to score.
    """
    s = settings(options)
    if not selected(item, options):
        return []
    by_id = {a["request_id"]: a for a in answers}
    row = _base_row(item, s)
    try:
        passages = setting_passages(item, options)
    except ValueError as e:
        return [{**row, "error": str(e)}]
    row["n_passages"] = len(passages)
    response, why, truncated = _response(item, by_id, s)
    row["response_truncated"] = truncated
    if response is None:
        return [{**row, "error": why}]
    failures: list[str] = []

    def judged(variant: str, route: str) -> str | None:
        answer = by_id.get(request_id(item, variant, route))
        if answer is not None and (answer.get("error") or answer.get("text") is None):
            failures.append(f"{variant}@{route}: {answer.get('error') or 'no text'}")
            return None
        return None if answer is None else answer["text"]

    ratings = {judge: parse_rating(text) for judge in s.rb_llm_judges if (text := judged(RB_LLM, judge)) is not None}
    idk_text = judged(IDK, s.idk_judge)
    idk = parse_idk(idk_text) if idk_text is not None else None
    rl_f, status, n_statements, n_supported = _faithfulness(judged(STATEMENTS, s.ragas_judge),
                                                            judged(VERDICTS, s.ragas_judge))
    answerability = item["answerability"]
    rb_llm = median_rating(ratings.values())
    row.update({
        "response": response, "rouge_l": rouge_l(response, item["reference"]),
        "rb_llm": rb_llm, "rb_llm_judges": list(ratings), "rb_llm_ratings": list(ratings.values()),
        "rb_llm_idk": _conditioned(rb_llm, answerability, idk),
        "rl_f": rl_f, "rl_f_status": status, "n_statements": n_statements, "n_supported": n_supported,
        "rl_f_idk": _conditioned(rl_f, answerability, idk),
        "idk": idk, "idk_word": None if idk_text is None else idk_word(idk_text),
        "correct": answerability_correct(answerability, idk),
        "judge_errors": "; ".join(failures) or None,
    })
    return [row]


def _base_row(item: Mapping[str, Any], s: Settings) -> dict[str, Any]:
    """Every column a row has, so error rows and scored rows share one schema."""
    keep = ("item_id", "benchmark", "subset", "task_id", "conversation_id", "collection", "answerability",
            "question_type", "multi_turn", "turn", "turn_group", "reference")
    return {**{k: item[k] for k in keep}, "setting": s.setting, "responses": s.responses, "n_passages": None,
            "response": None, "response_truncated": None, "rouge_l": None, "bert_encoder": None,
            "bert_recall": None, "bert_kprec": None, "rb_alg": None, "rb_alg_idk": None, "rb_llm": None,
            "rb_llm_judges": [], "rb_llm_ratings": [], "rb_llm_idk": None, "rl_f": None, "rl_f_status": "not_judged",
            "n_statements": None, "n_supported": None, "rl_f_idk": None, "idk": None, "idk_word": None,
            "correct": None, "judge_errors": None, "error": None}


def _faithfulness(statements_text: str | None, verdicts_text: str | None) -> tuple[float | None, str, int | None,
                                                                                   int | None]:
    """(RL_F, status, statements, supported). NaN RL_F: no statements, or a judge output that does not parse
    (RAGAS gives NaN there too); None: not judged (no answer, or a failed request)."""
    if statements_text is None:
        return None, "not_judged", None, None
    statements = parse_statements(statements_text)
    if statements is None:
        return math.nan, "statements_unparsed", None, None
    if not statements:
        return math.nan, "no_statements", 0, None
    if verdicts_text is None:
        return None, "not_judged", len(statements), None
    verdicts = parse_statement_verdicts(verdicts_text)
    if verdicts is None:
        return math.nan, "verdicts_unparsed", len(statements), None
    return faithfulness(verdicts), "scored", len(statements), sum(verdicts)


def _conditioned(value: float | None, answerability: str, idk: float | None) -> float | None:
    """IDK-conditioned value; a missing raw value still conditions to 1 or 0 where IDK alone decides."""
    out = condition_on_idk(math.nan if value is None else value, answerability, idk)
    return None if math.isnan(out) and value is None else out


def text_pairs(item: Mapping[str, Any], row: Mapping[str, Any],
               options: Mapping[str, Any] | None = None) -> list[dict[str, str]]:
    """What the encoder stage scores for a row: the response against the reference (Bert-Rec) and against
    each passage of the setting (Bert-KPrec); [] for a row without a response."""
    if row.get("error") or row.get("response") is None:
        return []
    references = [item["reference"]] + [p["text"] for p in setting_passages(item, options)]
    return [{"pair_id": _pair_id(row, i), "candidate": row["response"], "reference": reference}
            for i, reference in enumerate(references)]


def _pair_id(row: Mapping[str, Any], index: int) -> str:
    """Pair 0 is the response against the reference (Bert-Rec); pair i > 0 against passage i (Bert-KPrec)."""
    return f"{row['item_id']}#bert_recall" if index == 0 else f"{row['item_id']}#bert_kprec/{index - 1}"


def add_text_pair_scores(row: dict[str, Any], scores: Mapping[str, Mapping[str, float]],
                         encoder: str) -> dict[str, Any]:
    """The row with its pairs' BERTScores (`scores`: pair id -> precision, recall, f1; NaN for a pair with an
    empty side) read into `add_bert_scores`."""
    if row.get("error") or row.get("response") is None:
        return dict(row)
    recall = scores[_pair_id(row, 0)]["recall"]
    kprecs = [scores[_pair_id(row, i)]["precision"] for i in range(1, row["n_passages"] + 1)]
    return add_bert_scores(row, None if math.isnan(recall) else recall,
                           [None if math.isnan(v) else v for v in kprecs], encoder)


def add_bert_scores(row: dict[str, Any], bert_recall: float | None, bert_kprecs: Iterable[float | None],
                    encoder: str) -> dict[str, Any]:
    """The row with the encoder stage's numbers: Bert-Rec against the reference, Bert-KPrec (max over the
    passages; none for no passages), RB_alg and its IDK-conditioned value, and which encoder gave them
    (e.g. "microsoft/deberta-xlarge-mnli@40, rescaled"). A missing Bert-Rec (an empty response or reference)
    leaves RB_alg None, unless RougeL is 0, which makes RB_alg 0 whatever the rest."""
    if row.get("error"):
        return dict(row)
    kprec = max_kprec(bert_kprecs)
    if bert_recall is None:
        value = 0.0 if row["rouge_l"] == 0 else None
    else:
        value = rb_alg(bert_recall, row["rouge_l"], kprec)
    return {**row, "bert_encoder": encoder, "bert_recall": bert_recall, "bert_kprec": kprec, "rb_alg": value,
            "rb_alg_idk": _conditioned(value, row["answerability"], row["idk"])}


# ---- aggregation


def group_key(row: dict[str, Any]) -> str:
    """setting|answerability|turn group|domain|question types|multi-turn type: every breakdown of the paper."""
    return "|".join(str(row.get(f) or NA) for f in GROUP_FIELDS)


Parsed = dict[str, list[tuple[tuple[str, ...], list[tuple[str, float]]]]]  # measure -> [(group key, values)]
METRICS = ("answerability_acc", "rb_alg", "rb_alg_idk", "rb_llm", "rb_llm_idk", "rl_f", "rl_f_idk", "rouge_l")
COUNTS = ("failed", "rl_f_nan", "idk_unknown", "judge_failed")


def measures(row: dict[str, Any]) -> dict[str, float | None]:
    """Per-task values; None: the task does not count for that measure (a NaN RL_F counts in rl_f_nan only)."""
    if row.get("error"):
        return {"failed": 1.0}
    status = row.get("rl_f_status")
    values: dict[str, float | None] = {"failed": 0.0, "answerability_acc": row.get("correct")}
    for name in METRICS[1:]:
        value = row.get(name)
        values[name] = None if value is None or math.isnan(value) else float(value)
    values["rl_f_nan"] = (1.0 if status in ("no_statements", "statements_unparsed", "verdicts_unparsed")
                          else 0.0 if status == "scored" else None)
    values["idk_unknown"] = None if row.get("idk_word") is None else float(row.get("idk") is None)
    values["judge_failed"] = float(bool(row.get("judge_errors")))
    return values


def summarize(groups: dict[str, dict[str, list[tuple[str, float]]]], resamples: int = 1000) -> dict[str, Any]:
    """metrics.json: per setting, Table 5's numbers over the paper's classes (ANSWERABLE, PARTIAL,
    UNANSWERABLE), and the breakdowns of Figure 3 / Appendix I: by answerability (every class, UNDERSPECIFIED
    and CONVERSATIONAL included, on their own), and over the paper's classes by first/later turn, domain,
    question type (a task counts under each of its types) and multi-turn type. Each metric: mean, n and a
    95% bootstrap interval; NaN RL_F values are left out of RL_F and counted (rl_f_nan)."""
    parsed: Parsed = {
        measure: [(tuple(key.split("|")), pairs) for key, pairs in by_group.items()]
        for measure, by_group in groups.items()}
    keys = {key for entries in parsed.values() for key, _ in entries}
    failed = [v for _, pairs in parsed.get("failed", []) for _, v in pairs]
    metrics: dict[str, Any] = {"benchmark": BENCHMARK, "n": sum(1 for v in failed if v == 0),
                               "n_errors": int(sum(failed)), "paper_classes": list(PAPER_CLASSES), "settings": {}}
    for setting in _ordered(SETTINGS, {k[0] for k in keys}):
        metrics["settings"][setting] = _setting_metrics(parsed, setting, {k for k in keys if k[0] == setting},
                                                        resamples)
    return metrics


def _setting_metrics(parsed: Parsed, setting: str, keys: set[tuple[str, ...]], resamples: int) -> dict[str, Any]:
    def paper(k: tuple[str, ...]) -> bool:
        return k[1] in PAPER_CLASSES

    def cell(name: str, keep: Callable[[tuple[str, ...]], bool]) -> dict[str, Any]:
        return _cell(parsed, lambda k: k[0] == setting and keep(k), f"{BENCHMARK}/{setting}/{name}", resamples)

    out: dict[str, Any] = {"overall": cell("overall", paper), "by_answerability": {
        a: cell(f"by_answerability/{a}", lambda k, a=a: k[1] == a) for a in _ordered(ANSWERABILITY, {k[1] for k in keys})}}
    for name, index in (("by_turn", 2), ("by_domain", 3), ("by_multi_turn", 5)):
        out[name] = {v: cell(f"{name}/{v}", lambda k, i=index, v=v: paper(k) and k[i] == v)
                     for v in _ordered(_BREAKDOWN_ORDER.get(name, ()), {k[index] for k in keys if paper(k)})}
    types = {t for k in keys if paper(k) for t in k[4].split("+")}
    out["by_question_type"] = {t: cell(f"by_question_type/{t}", lambda k, t=t: paper(k) and t in k[4].split("+"))
                               for t in sorted(types)}
    return out


def _cell(parsed: Parsed, keep: Callable[[tuple[str, ...]], bool], seed: str, resamples: int) -> dict[str, Any]:
    """Mean, n and ci95 of each metric over the groups `keep` accepts, items in id order; counts of the rest."""
    def values(measure: str) -> list[float]:
        pairs = sorted(p for key, ps in parsed.get(measure, []) if keep(key) for p in ps)
        return [v for _, v in pairs]

    failed = values("failed")
    out: dict[str, Any] = {"n": sum(1 for v in failed if v == 0), "n_errors": int(sum(failed))}
    for measure in METRICS:
        vs = values(measure)
        out[measure] = {"mean": sum(vs) / len(vs) if vs else None, "n": len(vs),
                        "ci95": bootstrap_ci(vs, f"{seed}/{measure}", resamples)}
    out.update({measure: int(sum(values(measure))) for measure in COUNTS[1:]})
    return out


def _ordered(known: Sequence[str], present: set[str]) -> list[str]:
    """`present` in the paper's order, others after, sorted."""
    return [k for k in known if k in present] + sorted(present - set(known))


# ---- tables

TABLE5 = (("Ans. Acc.", "answerability_acc"), ("RB_alg", "rb_alg_idk"), ("RB_llm", "rb_llm_idk"), ("RL_F", "rl_f_idk"))
RAW = (("RB_alg raw", "rb_alg"), ("RB_llm raw", "rb_llm"), ("RL_F raw", "rl_f"), ("RougeL", "rouge_l"))
BREAKDOWNS = (("by_answerability", "Appendix I, Table 16(a): by answerability"),
              ("by_turn", "Appendix I, Table 16(b) / Figure 3(b): first turn vs later turns"),
              ("by_domain", "Appendix I, Table 16(c) / Figure 3(c): by domain"),
              ("by_question_type", "Appendix I.2: by question type (a task counts under each of its types)"),
              ("by_multi_turn", "Appendix I.2: by multi-turn type"))
SHORT = {"rb_alg_idk": "RB_alg", "rb_llm_idk": "RB_llm", "rl_f_idk": "RL_F"}


def table_text(metrics: list[dict[str, Any]]) -> str:
    """Table 5 (IDK-conditioned, the paper's numbers; then raw), one row per model and a column per setting,
    over the paper's classes; then the Appendix I breakdowns (conditioned), one row per model and setting;
    then counts (tasks, errors, NaN RL_F, unknown IDK). Two decimals like the paper; '-' where there is no
    value (RB_alg stays '-' until the encoder stage has filled it)."""
    settings_present = _ordered(SETTINGS, {s for m in metrics for s in m.get("settings", {})})
    several = len({m.get("config") for m in metrics}) > 1  # e.g. the sample and the mini config of one run

    def _model(m: dict[str, Any]) -> str:
        name = str(m.get("model") or "?")
        return f"{name} ({m['config']})" if several and m.get("config") else name

    def by_setting(title: str, columns: Sequence[tuple[str, str]]) -> str:
        header = ["Model"] + [f"{name} {SETTING_TITLES.get(s, s)}" for name, _ in columns for s in settings_present]
        rows = [[_model(m)] + [_num(m.get("settings", {}).get(s, {}).get("overall", {}).get(measure, {}).get("mean"))
                               for _, measure in columns for s in settings_present] for m in metrics]
        return grid(title, header, rows)

    sections = [
        ("mtRAG generation. IDK-conditioned metrics (section 6.3.3) over ANSWERABLE, PARTIAL and UNANSWERABLE "
         "tasks; UNDERSPECIFIED and CONVERSATIONAL tasks appear only in the answerability breakdown."),
        by_setting("Table 5", TABLE5),
        by_setting("Table 5, raw (not conditioned on IDK)", RAW),
    ]
    pairs = [(m, s) for m in metrics for s in settings_present if s in m.get("settings", {})]
    for section, title in BREAKDOWNS:
        groups = _ordered(_BREAKDOWN_ORDER.get(section, ()),
                          {g for m, s in pairs for g in m["settings"][s].get(section, {})})
        header = ["Model [setting]"] + [f"{g} {SHORT[measure]}" for g in groups for measure in SHORT]
        rows = [[f"{_model(m)} [{SETTING_TITLES.get(s, s)}]"] + [
            _num(m["settings"][s].get(section, {}).get(g, {}).get(measure, {}).get("mean"))
            for g in groups for measure in SHORT] for m, s in pairs]
        sections.append(grid(title, header, rows))
    rows = [[f"{_model(m)} [{SETTING_TITLES.get(s, s)}]"] + [
        str(m["settings"][s]["overall"].get(c, "-")) for c in ("n", "n_errors", "rl_f_nan", "idk_unknown",
                                                               "judge_failed")] for m, s in pairs]
    sections.append(grid("Counts over the paper's classes", ["Model [setting]", "tasks", "errors", "RL_F NaN",
                                                              "IDK unknown", "judge failed"], rows))
    return "\n\n".join(sections)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"

