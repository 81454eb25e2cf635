"""mtRAG generation options: the retrieval setting, generate or score given responses, the judges and their
prompts, token budgets, and the BERTScore encoder of RB_alg. Defaults are the paper's protocol; checks the
types cannot say live in `option_problems`."""
from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

import yaml

from benchmarks.mtrag.common import task_id
from benchmarks.paths import project_path

BENCHMARK = "mtrag_generation"
SETTINGS = ("reference", "reference_rag", "full_rag")
GENERATION, RB_LLM, IDK, STATEMENTS, VERDICTS = "generation", "rb_llm", "idk", "statements", "verdicts"
VARIANTS = (GENERATION, RB_LLM, IDK, STATEMENTS, VERDICTS)
SELF = "self"  # the route of a request the cell's own model answers
# Placeholders each prompt must use (and may only use).
PLACEHOLDERS = {
    "generation": {"passages"},
    "passage": {"number", "text"},
    RB_LLM: {"previous_conversation", "current_question", "reference_answer", "response", "passages"},
    IDK: {"inquiry", "response"},
    STATEMENTS: {"question", "answer"},
    VERDICTS: {"context", "statements"},
}
PLACEHOLDER = re.compile(r"\{(\w+)\}")
_ROUTE = re.compile(r"^[A-Za-z0-9_.:/\-]+$")  # a model name; no '#', '@' or spaces (they build request ids)


@dataclass(frozen=True)
class Judges:
    """Who judges: model names (conf/models or the sweep's), or "self" for the cell's model."""

    rb_llm: list[str] = field(default_factory=lambda: [SELF])  # RB_llm is the median over these
    idk: str = SELF
    ragas: str = SELF  # statements and verdicts of RL_F


@dataclass(frozen=True)
class MaxTokens:
    generation: int = 512
    rb_llm: int = 1024
    idk: int = 16
    statements: int = 1024
    verdicts: int = 2048


@dataclass(frozen=True)
class Prompts:
    """Overrides of the prompts file's entries; None keeps the file's."""

    generation: str | None = None
    passage: str | None = None
    rb_llm: str | None = None
    idk: str | None = None
    statements: str | None = None
    verdicts: str | None = None


@dataclass(frozen=True)
class BertScore:
    """The encoder of Bert-Rec / Bert-KPrec (actors.bertscore); the authors': deberta-xlarge-mnli layer 40,
    rescaled with bert-score's baseline."""

    model: str = "microsoft/deberta-xlarge-mnli"
    num_layers: int = 40
    lang: str = "en"
    rescale_with_baseline: bool = True
    baseline_path: str | None = None  # relative to the project root
    batch_size: int = 64
    actors: int = 1
    num_cpus: float = 1  # Ray resources may be fractions
    num_gpus: float = 0


@dataclass(frozen=True)
class Options:
    setting: Literal["reference", "reference_rag", "full_rag"] = "reference"
    responses: Literal["generate", "given"] = "generate"  # given: score the task's predictions[0]
    retrieved_file: str | None = None  # RAG settings: a run (official task format); else retrieved_contexts
    top_k: int = 5  # passages in the RAG settings
    max_reference_passages: int | None = None  # e.g. 2: tasks with at most 2 reference passages (the 426)
    task_ids: list[str] | None = None  # only these tasks (either id spelling)
    judges: Judges = field(default_factory=Judges)
    prompt_role: Literal["system", "user"] = "system"  # where the D.2 instruction and passages go
    max_tokens: MaxTokens = field(default_factory=MaxTokens)
    prompts_file: str | None = "conf/prompts/mtrag_generation.yaml"  # relative to the project root
    prompts: Prompts = field(default_factory=Prompts)
    bertscore: BertScore | None = field(default_factory=BertScore)  # null: no encoder stage (RB_alg empty)


def option_problems(options: Options) -> list[str]:
    """Problems the types cannot say, each naming its key: ranges, judge names, files, prompt placeholders."""
    problems = []
    if options.top_k < 1:
        problems.append("options.top_k: expected an integer >= 1")
    if options.max_reference_passages is not None and options.max_reference_passages < 0:
        problems.append("options.max_reference_passages: expected an integer >= 0 or null")
    ids = options.task_ids
    if ids is not None and (not ids or not all(i.strip() for i in ids)):
        problems.append("options.task_ids: expected a non-empty list of task ids, or null")
    problems += _judge_problems(options.judges)
    problems += _bertscore_problems(options.bertscore)
    problems += [f"options.max_tokens.{f.name}: expected an integer >= 1" for f in fields(MaxTokens)
                 if getattr(options.max_tokens, f.name) < 1]
    for key in ("retrieved_file", "prompts_file"):
        path = getattr(options, key)
        if path is not None and not project_path(path).is_file():
            problems.append(f"options.{key}: {project_path(path)} is not a file")
    if problems:
        return problems
    try:
        return _prompt_problems(prompts(options))
    except ValueError as e:
        return [str(e)]


def _judge_problems(judges: Judges) -> list[str]:
    problems = []
    names = judges.rb_llm
    if not names or not all(_ROUTE.match(n) for n in names):
        problems.append(f"options.judges.{RB_LLM}: expected a non-empty list of model names ('{SELF}': the cell's "
                        "model)")
    elif len(set(names)) != len(names):
        problems.append(f"options.judges.{RB_LLM}: a judge is listed twice")
    for key in (IDK, "ragas"):
        if not _ROUTE.match(getattr(judges, key)):
            problems.append(f"options.judges.{key}: expected a model name ('{SELF}': the cell's model)")
    return problems


def _bertscore_problems(encoder: BertScore | None) -> list[str]:
    if encoder is None:
        return []
    problems = [f"options.bertscore.{key}: expected text" for key in ("model", "lang")
                if not getattr(encoder, key).strip()]
    for key, least in (("num_layers", 1), ("batch_size", 1), ("actors", 1), ("num_cpus", 0), ("num_gpus", 0)):
        if getattr(encoder, key) < least:
            kind = "a number" if key in ("num_cpus", "num_gpus") else "an integer"
            problems.append(f"options.bertscore.{key}: expected {kind} >= {least}")
    path = encoder.baseline_path
    if path is not None and not project_path(path).is_file():
        problems.append(f"options.bertscore.baseline_path: {path!r} is not a file")
    return problems


def _prompt_problems(prompts: Mapping[str, Any]) -> list[str]:
    problems = []
    for key, wanted in PLACEHOLDERS.items():
        template = prompts.get(key)
        if not isinstance(template, str) or not template.strip():
            problems.append(f"options.prompts.{key}: missing or not text")
            continue
        names = set(PLACEHOLDER.findall(template))
        problems += [f"options.prompts.{key}: placeholder {{{n}}} missing" for n in sorted(wanted - names)]
        problems += [f"options.prompts.{key}: unknown placeholder {{{n}}} (known: "
                     f"{', '.join('{' + w + '}' for w in sorted(wanted))})" for n in sorted(names - wanted)]
    return problems + [f"options.prompts.{key}: unknown prompt (known: {', '.join(PLACEHOLDERS)})"
                       for key in prompts if key not in PLACEHOLDERS]


def prompts(options: Options) -> dict[str, Any]:
    """The prompts in force: the prompts file's entries, overridden by `options.prompts`; ValueError naming
    options.prompts_file when the file cannot be read."""
    overrides = {k: v for k, v in asdict(options.prompts).items() if v is not None}
    return {**(_prompts_file(options.prompts_file) if options.prompts_file else {}), **overrides}


@functools.lru_cache(maxsize=8)
def _prompts_file(path: str) -> dict[str, Any]:
    """A prompt file's entries, read once per process (expand and combine run once per item)."""
    full = project_path(path)
    try:
        loaded = yaml.safe_load(full.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ValueError(f"options.prompts_file: cannot read {full}: {e}") from None
    if isinstance(loaded, dict):
        return loaded
    raise ValueError(f"options.prompts_file: {full} is not a mapping <prompt>: <text>")


def wanted_tasks(options: Options) -> frozenset[str] | None:
    """The task ids of `task_ids` in the qrels' spelling; None: every task."""
    return None if options.task_ids is None else _task_set(tuple(options.task_ids))


@functools.lru_cache(maxsize=8)
def _task_set(ids: tuple[str, ...]) -> frozenset[str]:
    return frozenset(task_id(i.strip()) for i in ids)


def encoder_settings(options: Options) -> dict[str, Any] | None:
    """The encoder stage's settings (baseline_path made absolute); None: no stage."""
    if options.bertscore is None:
        return None
    values = asdict(options.bertscore)
    if values["baseline_path"]:
        values["baseline_path"] = str(project_path(values["baseline_path"]))
    return values


def judge_routes(options: Options) -> list[str]:
    """The judge models the requests go to besides the cell's own, in the order first named."""
    judges = options.judges
    return [name for name in dict.fromkeys((*judges.rb_llm, judges.idk, judges.ragas)) if name != SELF]
