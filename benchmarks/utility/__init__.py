"""Utility judgments (seeds/utility_judgments.txt; rules in PROTOCOLS.md 4 and 5).

A judge sees a question and 10 candidate passages (GTI: ground-truth evidence among counterfactual and noisy
passages) and picks the evidence with utility, in one of four forms: pointwise (yes/no per passage),
pairwise (which of two, every pair in both orders, ranked by wins), listwise-set (a set) and listwise-rank
(a ranking); each with utility or relevance wording, question or passages first, and a Figure 6 requirement
(none, cot, reasoning, answer_first). Listwise forms run k seeded shuffles whose answers are mapped back to
the original passages and voted. One prediction row per (item, condition):

- set forms (pointwise, listwise_set): precision, recall, F1 of the selected set; correct = F1;
- rank forms (pairwise, listwise_rank): NDCG@1, NDCG@5, MRR@5 of the ranking; correct = NDCG@5.

All averages are macro over questions, per condition and dataset, with 95% bootstrap intervals; listwise
rows also report the score of each shuffle by where the (first) ground-truth passage stood (Figure 5).
GTU rows (with gold answers) add a round: the generator answers from each evidence source, one QA row per
source (form "qa"; Table 4; see gtu.py for the sources, the number of passages each hands over, the metrics).
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import json
import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from benchmarks.options import is_int, plain, unknown_keys
from benchmarks.records import read_records
from benchmarks.stats import bootstrap_ci, stable_seed
from benchmarks.tables import aligned
from benchmarks.utility import gtu
from benchmarks.utility.metrics import (
    k_sampling_evidence,
    mrr_at_k,
    ndcg_at_k,
    rank_by_wins,
    set_prf,
    top_m,
    vote_ranks,
    vote_sets,
)
from benchmarks.utility.parsing import parse_choice, parse_judgment, parse_rank, parse_selection
from benchmarks.utility.prompts import (
    FORMS,
    LISTWISE,
    ORDERS,
    RANK_FORMS,
    REQUIREMENTS,
    SET_FORMS,
    answer_prompt,
    default_prompts,
    judgment_messages,
    merged,
    prompt_problems,
)

BENCHMARK = "utility"
KINDS = ("generative",)
MAX_REDRAWS = 100  # a shuffle equal to an earlier one is redrawn (seeded) up to this often: few passages
ORDER_TAGS = {"question_first": "q_first", "passages_first": "p_first"}
AUTHORS = "authors"  # requirements: [authors] = the requirement of the authors' script for each form
DEFAULT_SUBSET = "GTI"
SET_METRICS = ("precision", "recall", "f1")
RANK_METRICS = ("ndcg_1", "ndcg_5", "mrr_5")
METRIC_TITLES = {"precision": "P", "recall": "R", "f1": "F1", "ndcg_1": "NDCG@1", "ndcg_5": "NDCG@5",
                 "mrr_5": "MRR@5"}

DEFAULTS: dict[str, Any] = {
    "forms": list(FORMS),
    "wordings": ["utility"],
    "orders": ["question_first"],
    "requirements": [AUTHORS],
    "k": 3,  # shuffles per listwise judgment
    "gt_position": None,  # None: random shuffles; an int (or a list of ints/None): a ground-truth passage there
    "max_pairs": None,  # pairwise: None = every pair; an int = that many seeded pairs (small demos only)
    "max_tokens": None,  # None: the engine's default (the model's max_new_tokens)
    "temperature": None,  # None: greedy (the engine's default)
    "answer": True,  # GTU rows (with gold answers): answer from each evidence source (gtu.py); GTI rows never
    "answer_m": None,  # None: rank forms hand over as many passages as set forms select (gtu.py); an int: m
    "prompts": {},  # overrides of prompts.yaml, merged key by key
}


@dataclass(frozen=True)
class Condition:
    """One prompt condition: the row a prediction belongs to (Tables 2-3, Figures 4-6)."""

    form: str
    wording: str
    order: str
    requirement: str
    gt_position: int | None = None  # listwise only: where a ground-truth passage is placed

    @property
    def key(self) -> str:
        gt = "" if self.gt_position is None else f"/gt{self.gt_position}"
        return f"{self.form}/{self.wording}/{ORDER_TAGS[self.order]}/{self.requirement}{gt}"


@dataclass(frozen=True)
class Settings:
    conditions: tuple[Condition, ...]
    k: int
    max_pairs: int | None
    max_tokens: int | None
    temperature: float | None
    answer: bool
    answer_m: int | None
    prompts: dict[str, Any]


# ---------------------------------------------------------------------------------------------- options

def check_options(options: Mapping[str, Any] | None) -> list[str]:
    """Problems with a benchmark config's options, each naming its key; [] when they are fine."""
    options = plain(options or {})
    if not isinstance(options, dict):
        return ["options: expected a mapping"]
    problems = unknown_keys(options, DEFAULTS, "options")
    values = {**DEFAULTS, **options}
    prompts = values["prompts"]
    if not isinstance(prompts, dict):
        return problems + ["options.prompts: expected a mapping"]
    prompts = merged(default_prompts(), prompts)
    problems += prompt_problems(prompts)
    choices = {"forms": FORMS, "wordings": tuple(prompts.get("wordings") or ()), "orders": ORDERS,
               "requirements": (*REQUIREMENTS, AUTHORS)}
    for key, allowed in choices.items():
        chosen = values[key]
        if not isinstance(chosen, list) or not chosen:
            problems.append(f"options.{key}: expected a non-empty list")
            continue
        problems += [f"options.{key}: {c!r} is not one of {', '.join(allowed)}" for c in chosen if c not in allowed]
    if not (is_int(values["k"]) and values["k"] >= 1):
        problems.append("options.k: expected an integer >= 1")
    if not isinstance(values["answer"], bool):
        problems.append("options.answer: expected true or false")
    for key in ("max_pairs", "max_tokens", "answer_m"):
        if values[key] is not None and not (is_int(values[key]) and values[key] >= 1):
            problems.append(f"options.{key}: expected an integer >= 1 or null")
    temperature = values["temperature"]
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
                                    or temperature < 0):
        problems.append("options.temperature: expected a number >= 0 or null")
    positions = values["gt_position"] if isinstance(values["gt_position"], list) else [values["gt_position"]]
    if not positions or not all(p is None or (is_int(p) and p >= 0) for p in positions):
        problems.append("options.gt_position: expected null, an integer >= 0, or a non-empty list of those")
    return problems


def settings(options: Mapping[str, Any] | None = None) -> Settings:
    """The validated settings of a config's options (defaults filled in); ValueError naming every problem."""
    return _settings(json.dumps(plain(options or {}), sort_keys=True))


@functools.lru_cache(maxsize=32)
def _settings(options_json: str) -> Settings:
    options = json.loads(options_json)
    problems = check_options(options)
    if problems:
        raise ValueError("; ".join(problems))
    values = {**DEFAULTS, **options}
    prompts = merged(default_prompts(), values["prompts"])
    positions = values["gt_position"] if isinstance(values["gt_position"], list) else [values["gt_position"]]
    conditions: list[Condition] = []
    for form, wording, order, requirement in itertools.product(
            values["forms"], values["wordings"], values["orders"], values["requirements"]):
        resolved = prompts["authors_requirement"][form] if requirement == AUTHORS else requirement
        for gt in (positions if form in LISTWISE else [None]):
            condition = Condition(form, wording, order, resolved, gt)
            if condition not in conditions:
                conditions.append(condition)
    temperature = values["temperature"]
    return Settings(tuple(conditions), values["k"], values["max_pairs"], values["max_tokens"],
                    None if temperature is None else float(temperature), values["answer"], values["answer_m"],
                    prompts)






# ---------------------------------------------------------------------------------------------- loading

def load_items(path: str) -> Iterator[dict[str, Any]]:
    """GTI/GTU rows from a JSONL/JSON/Parquet file or a folder of them; bad rows come out as error items,
    in place, naming file, row and field."""
    first_seen: dict[str, str] = {}
    for record in read_records(path):
        where = f"{record.source}: row {record.row}"
        if record.data is None:
            yield _error_item(record.source, record.row, f"{BENCHMARK}/{record.source}:{record.row}",
                              DEFAULT_SUBSET, f"{where}: {record.problem}")
            continue
        row = record.data
        fallback = f"{BENCHMARK}/{record.source}:{record.row}"  # an id for rows that cannot have their own
        key = item_id(row) if isinstance(row.get("question"), str) or row.get("id") else fallback
        subset = row["dataset"] if isinstance(row.get("dataset"), str) and row["dataset"] else DEFAULT_SUBSET
        problem = _row_problem(row)
        if not problem and key in first_seen:
            problem = f"duplicate of {first_seen[key]} (same id, or same question)"
        if problem:
            yield _error_item(record.source, record.row, fallback if key in first_seen else key, subset,
                              f"{where}: {problem}")
            continue
        first_seen[key] = where
        answers = row.get("answers")
        yield {
            "item_id": key, "benchmark": BENCHMARK, "subset": subset, "error": None,
            "source": record.source, "row": record.row,
            "question": row["question"], "passages": list(row["passage"]),
            "labels": [int(label) for label in row["ground_truth_label"]],
            "passages_types": list(row["passages_types"]) if row.get("passages_types") is not None else None,
            "answers": [answers] if isinstance(answers, str) else list(answers or []),
            "dataset": row.get("dataset"),
        }


def item_id(row: Mapping[str, Any]) -> str:
    """A stable id: the row's own `id` when it has one, else a hash of the question."""
    if row.get("id") not in (None, ""):
        return f"{BENCHMARK}/{row['id']}"
    return f"{BENCHMARK}/{hashlib.sha1(str(row.get('question')).encode('utf-8')).hexdigest()[:16]}"


def _row_problem(row: Mapping[str, Any]) -> str | None:
    """The first thing wrong with a raw row, naming its field; None for a good row."""
    question, passages, labels = row.get("question"), row.get("passage"), row.get("ground_truth_label")
    if not isinstance(question, str) or not question.strip():
        return "field 'question' " + ("missing" if question is None else "empty or not text")
    if not isinstance(passages, list) or not passages:
        return "field 'passage' " + ("missing" if passages is None else "not a non-empty list")
    bad = next((i for i, p in enumerate(passages) if not isinstance(p, str) or not p.strip()), None)
    if bad is not None:
        return f"field 'passage': passage {bad} empty or not text"
    if not isinstance(labels, list):
        return "field 'ground_truth_label' " + ("missing" if labels is None else "not a list")
    if len(labels) != len(passages):
        return f"field 'ground_truth_label': {len(labels)} labels for {len(passages)} passages"
    if not all(is_int(label) and label in (0, 1) for label in labels):
        return "field 'ground_truth_label': labels must be 0 or 1"
    types = row.get("passages_types")
    if types is not None and (not isinstance(types, list) or len(types) != len(passages)):
        return f"field 'passages_types': expected a list of {len(passages)}"
    answers = row.get("answers")
    if answers is not None and not isinstance(answers, str) and (
            not isinstance(answers, list) or not all(isinstance(a, str) for a in answers)):
        return "field 'answers': expected a list of strings"
    if row.get("dataset") is not None and not isinstance(row["dataset"], str):
        return "field 'dataset': not text"
    return None


def _error_item(source: str, row: int, key: str, subset: str, problem: str) -> dict[str, Any]:
    return {"item_id": key, "benchmark": BENCHMARK, "subset": subset, "source": source, "row": row,
            "error": problem}


# ---------------------------------------------------------------------------------------------- requests

def shuffles(item: Mapping[str, Any], k: int, gt_position: int | None = None) -> list[list[int]]:
    """k seeded permutations of the item's passages (prompt position -> original index), distinct while the
    passages allow it. Seeds come from the item id and the shuffle index only, so every condition of an item
    sees the same inputs (the paper keeps utility and relevance inputs equal). With gt_position, the
    ground-truth passage that comes first in each shuffle swaps into that position (Figure 5)."""
    n = len(item["passages"])
    gold = {i for i, label in enumerate(item["labels"]) if label}
    out: list[list[int]] = []
    for s in range(k):
        for attempt in range(MAX_REDRAWS + 1):
            permutation = list(range(n))
            random.Random(stable_seed(item["item_id"], f"shuffle{s}", str(attempt))).shuffle(permutation)
            if gt_position is not None:
                first_gold = next(p for p, i in enumerate(permutation) if i in gold)
                permutation[first_gold], permutation[gt_position] = permutation[gt_position], permutation[first_gold]
            if permutation not in out:
                break
        out.append(permutation)
    return out


def _pairs(item: Mapping[str, Any], max_pairs: int | None) -> list[tuple[int, int]]:
    """Ordered pairs (Passage-0, Passage-1) to compare: every unordered pair (or `max_pairs` of them, seeded)
    in both orders, so position bias cancels."""
    unordered = list(itertools.combinations(range(len(item["passages"])), 2))
    if max_pairs is not None and max_pairs < len(unordered):
        unordered = sorted(random.Random(stable_seed(item["item_id"], "pairs")).sample(unordered, max_pairs))
    return [pair for i, j in unordered for pair in ((i, j), (j, i))]


def _condition_problem(item: Mapping[str, Any], condition: Condition) -> str | None:
    """Why a condition cannot run on this item (a fixed ground-truth position it cannot honour)."""
    p = condition.gt_position
    if p is not None and p >= len(item["passages"]):
        return f"gt_position {p} is beyond the item's {len(item['passages'])} passages"
    if p is not None and not any(item["labels"]):
        return f"gt_position {p}: the item has no ground-truth passage to place"
    return None


def _units(item: Mapping[str, Any], condition: Condition, config: Settings) -> list[tuple[str, list[int]]]:
    """(unit tag, permutation) of each request of a condition: the passages shown, in prompt order."""
    if condition.form == "pointwise":
        return [(f"p{i}", [i]) for i in range(len(item["passages"]))]
    if condition.form == "pairwise":
        return [(f"p{i}v{j}", [i, j]) for i, j in _pairs(item, config.max_pairs)]
    return [(f"s{s + 1}", perm) for s, perm in enumerate(shuffles(item, config.k, condition.gt_position))]


def expand(item: dict[str, Any], kind: str, options: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The requests of every condition of one item; each carries the permutation that maps its prompt
    positions (Passage-i, [i]) back to the item's original passages."""
    if kind not in KINDS:
        raise ValueError(f"utility judgments need a generative judge, not {kind!r}")
    config = settings(options)
    requests = []
    for condition in config.conditions:
        if _condition_problem(item, condition):
            continue
        for unit, permutation in _units(item, condition, config):
            messages = judgment_messages(config.prompts, condition.form, condition.wording, condition.order,
                                         condition.requirement, item["question"],
                                         [item["passages"][i] for i in permutation])
            requests.append(_request(item, f"{condition.key}/{unit}", permutation, messages, config))
    return requests


def followup(item: dict[str, Any], answers: Iterable[dict[str, Any]], kind: str,
             options: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The GTU answer round (gtu.py): once an item's judgments are in, one answer-generation request per
    evidence source whose evidence is known; nothing for items without gold answers or with options.answer
    false. The same answers give the same requests, so the pipeline stops after this round."""
    config = settings(options)
    if not gtu.wants_answers(item, config.answer):
        return []
    rows = _judgment_rows(item, {a["variant"]: a for a in answers}, config)
    sources = gtu.evidence_sources(item, rows, config.k, config.answer_m)
    return [_request(item, gtu.VARIANT + e.source, list(e.passages),
                     gtu.answer_messages(item, e, config.prompts), config)
            for e in sources if e.passages is not None]


def _request(item: Mapping[str, Any], variant: str, permutation: list[int], messages: list[dict[str, str]],
             config: Settings) -> dict[str, Any]:
    """One request; judgment and answer requests carry the same keys (each round is one set of Arrow columns).
    `permutation` holds the original indices of the passages shown, in prompt order."""
    request = {"request_id": f"{item['item_id']}#{variant}", "item_id": item["item_id"],
               "subset": item["subset"], "variant": variant, "permutation": permutation, "messages": messages}
    if config.temperature is not None:
        request["temperature"] = config.temperature
        request["seed"] = stable_seed(request["request_id"]) % 2**31
    if config.max_tokens is not None:
        request["max_tokens"] = config.max_tokens
    return request


# ---------------------------------------------------------------------------------------------- combine

ROW_FIELDS = ("precision", "recall", "f1", "ndcg_1", "ndcg_5", "mrr_5", "selected", "ranking", "consistency",
              "first_position_rate", "k_sampling_evidence")


def combine(item: dict[str, Any], answers: Iterable[dict[str, Any]], kind: str,
            options: Mapping[str, Any] | None = None, verdict: str = "text") -> list[dict[str, Any]]:
    """One prediction row per condition, and for a GTU item one QA row per evidence source (gtu.py).
    `verdict` is accepted for the pipeline's sake: these judgments are always read from the text. A failed or
    missing request fails its row (correct None); an unparseable judgment is counted in parse_failures and
    scores as an empty answer (selects or ranks nothing; a comparison nobody wins)."""
    config = settings(options)
    by_variant = {a["variant"]: a for a in answers}
    rows = _judgment_rows(item, by_variant, config)
    if not gtu.wants_answers(item, config.answer):
        return rows
    base = {"item_id": item["item_id"], "benchmark": BENCHMARK, "subset": item["subset"]}
    return rows + gtu.qa_rows(base, item, by_variant,
                              gtu.evidence_sources(item, rows, config.k, config.answer_m))


def _judgment_rows(item: Mapping[str, Any], by_variant: Mapping[str, dict[str, Any]], config: Settings
                   ) -> list[dict[str, Any]]:
    """The row of each judgment condition: its voted selection or ranking and their metrics."""
    rows = []
    for condition in config.conditions:
        units = [] if _condition_problem(item, condition) else _units(item, condition, config)
        got = [(unit, permutation, by_variant.get(f"{condition.key}/{unit}")) for unit, permutation in units]
        row: dict[str, Any] = {
            "item_id": item["item_id"], "benchmark": BENCHMARK, "subset": item["subset"],
            "condition": condition.key, "form": condition.form, "wording": condition.wording,
            "order": condition.order, "requirement": condition.requirement, "gt_position": condition.gt_position,
            "n_requests": len(units), "parse_failures": None, "correct": None,
            "truncated": any(bool(a and a.get("truncated")) for _, _, a in got),
            "n_tokens": sum(int((a or {}).get("n_tokens") or 0) for _, _, a in got),
            **{field: None for field in ROW_FIELDS},
            "shuffle_gt_positions": [], "shuffle_scores": [], "texts": [(a or {}).get("text") for _, _, a in got],
        }
        errors = sorted(f"{unit}: {a['error']}" for unit, _, a in got if a and a.get("error"))
        missing = [unit for unit, _, a in got if a is None]
        if missing:
            errors.append(f"no answer for request(s) {', '.join(missing)}")
        row["error"] = _condition_problem(item, condition) or "; ".join(errors) or None
        if row["error"] is None:
            row.update(_score(item, condition, [(p, a.get("text")) for _, p, a in got]))
            row["correct"] = row["f1"] if condition.form in SET_FORMS else row["ndcg_5"]
        rows.append(row)
    return rows


def _score(item: Mapping[str, Any], condition: Condition, judged: list[tuple[list[int], str | None]]
           ) -> dict[str, Any]:
    """The voted answer of one condition in original passage indices, and its metrics."""
    labels, n, form = item["labels"], len(item["labels"]), condition.form
    out: dict[str, Any] = {}
    if form == "pointwise":
        verdicts = [parse_judgment(text) for _, text in judged]
        out["selected"] = [p[0] for (p, _), v in zip(judged, verdicts) if v == 1]
    elif form == "pairwise":
        verdicts = [parse_choice(text) for _, text in judged]
        wins = [(p[v], p[1 - v]) for (p, _), v in zip(judged, verdicts) if v is not None]
        out["ranking"] = rank_by_wins(wins, tie_order=_tie_order(item))
        out.update(_pairwise_position(judged, verdicts))
    elif form == "listwise_set":
        verdicts = [parse_selection(text, n) for _, text in judged]
        selections = [[p[i] for i in v] if v is not None else [] for (p, _), v in zip(judged, verdicts)]
        out["selected"] = vote_sets(selections)
        out["k_sampling_evidence"] = k_sampling_evidence(selections)
        out["shuffle_scores"] = [set_prf(s, labels)[2] for s in selections]
    else:
        verdicts = [parse_rank(text, n) for _, text in judged]
        rankings = [[p[i] for i in v] if v is not None else [] for (p, _), v in zip(judged, verdicts)]
        out["ranking"] = vote_ranks(rankings)
        out["shuffle_scores"] = [ndcg_at_k(r, labels, 5) for r in rankings]
    if form in LISTWISE:
        out["shuffle_gt_positions"] = [next((pos for pos, i in enumerate(p) if labels[i]), None) for p, _ in judged]
    out["parse_failures"] = sum(v is None for v in verdicts)
    if form in SET_FORMS:
        out["precision"], out["recall"], out["f1"] = set_prf(out["selected"], labels)
    else:
        ranking = out["ranking"]
        out["ndcg_1"], out["ndcg_5"], out["mrr_5"] = (ndcg_at_k(ranking, labels, 1), ndcg_at_k(ranking, labels, 5),
                                                      mrr_at_k(ranking, labels, 5))
    return out


def _tie_order(item: Mapping[str, Any]) -> list[int]:
    """A seeded order of the item's passages that breaks ties in win counts without favouring a position."""
    order = list(range(len(item["passages"])))
    random.Random(stable_seed(item["item_id"], "ties")).shuffle(order)
    return order


def _pairwise_position(judged: list[tuple[list[int], str | None]], verdicts: list[int | None]) -> dict[str, Any]:
    """PROTOCOLS.md 5 for pairwise judges: how often the same passage wins both orders of a pair, and how often
    the judge picks whichever passage is shown first."""
    winner = {tuple(p): p[v] for (p, _), v in zip(judged, verdicts) if v is not None}
    both = [(i, j) for i, j in winner if i < j and (j, i) in winner]
    parsed = [v for v in verdicts if v is not None]
    return {"consistency": sum(winner[(i, j)] == winner[(j, i)] for i, j in both) / len(both) if both else None,
            "first_position_rate": sum(v == 0 for v in parsed) / len(parsed) if parsed else None}


# ---------------------------------------------------------------------------------------------- reducing

def group_key(row: Mapping[str, Any]) -> str:
    """Values are grouped by condition and dataset: each group is one cell of Tables 2-3 / Figures 4-6."""
    return f"{row.get('condition') or ''}|{row.get('subset') or ''}"


def row_key(row: Mapping[str, Any]) -> str:
    """One value per question within a group (a group is one condition), so averages are macro over questions."""
    return row["item_id"]


def measures(row: Mapping[str, Any]) -> dict[str, float | None]:
    """What the reducers track per row. `gt<p>` is the mean score of the row's shuffles whose first
    ground-truth passage stood at prompt position p (F1 for listwise-set, NDCG@5 for listwise-rank). QA rows
    track their answer scores (gtu.qa_measures)."""
    if row.get("form") == "qa":
        return gtu.qa_measures(row)
    error = bool(row.get("error"))
    out: dict[str, float | None] = {
        "correct": row.get("correct"), "error": float(error), "truncated": float(bool(row.get("truncated"))),
        "parse_failure_rate": None if error or not row.get("n_requests")
        else (row.get("parse_failures") or 0) / row["n_requests"],
    }
    for name in (*SET_METRICS, *RANK_METRICS, "consistency", "first_position_rate"):
        if row.get(name) is not None:
            out[name] = row[name]
    if not error:
        by_position: dict[int, list[float]] = {}
        for position, score in zip(row.get("shuffle_gt_positions") or [], row.get("shuffle_scores") or []):
            if position is not None:
                by_position.setdefault(int(position), []).append(float(score))
        out.update({f"gt{p}": sum(v) / len(v) for p, v in by_position.items()})
    return out


def summarize(groups: dict[str, dict[str, list[tuple[str, float]]]], resamples: int = 1000) -> dict[str, Any]:
    """metrics.json: per condition, per dataset and pooled ("all"), the macro average over questions of each
    metric with its 95% bootstrap interval, the parse-failure and error rates, and the by-position scores;
    under "qa" (GTU items only), per evidence source and dataset, the answer scores (gtu.summarize_qa)."""
    subsets_of: dict[str, set[str]] = {}
    for cell in {cell for by_cell in groups.values() for cell in by_cell}:
        condition, _, subset = cell.partition("|")
        if condition:  # rows without a condition are bad input rows: counted in n_errors only
            subsets_of.setdefault(condition, set()).add(subset)
    scored = [key for pairs in groups.get("correct", {}).values() for key, _ in pairs]
    errors = sum(v for pairs in groups.get("error", {}).values() for _, v in pairs)
    metrics: dict[str, Any] = {"benchmark": BENCHMARK, "n": len(scored), "n_errors": int(errors),
                               "n_items": len(set(scored)), "conditions": {}}
    qa = {c: subsets_of.pop(c) for c in list(subsets_of) if c.startswith(gtu.CONDITION)}
    for condition, subsets in sorted(subsets_of.items()):
        form = condition.split("/", 1)[0]
        out: dict[str, Any] = {"form": form, "metric": "f1" if form in SET_FORMS else "ndcg_5", "subsets": {}}
        for subset in sorted(subsets):
            out["subsets"][subset] = _cell(groups, [f"{condition}|{subset}"], f"{condition}|{subset}", resamples)
        out["all"] = _cell(groups, [f"{condition}|{s}" for s in subsets], f"{condition}|all", resamples)
        metrics["conditions"][condition] = out
    if qa:
        metrics["qa"] = gtu.summarize_qa(groups, qa, f"{BENCHMARK}/qa", resamples)
    return metrics


def _cell(groups: dict[str, dict[str, list[tuple[str, float]]]], cells: list[str], seed_key: str,
          resamples: int) -> dict[str, Any]:
    """One table cell: macro means with intervals over the questions pooled from `cells`."""
    def values(measure: str) -> list[float]:
        pairs = sorted((cell, key, v) for cell in cells for key, v in groups.get(measure, {}).get(cell, []))
        return [v for _, _, v in pairs]

    correct = values("correct")
    out: dict[str, Any] = {"n": len(correct), "correct": _mean(correct),
                           "correct_ci95": bootstrap_ci(correct, f"{BENCHMARK}/{seed_key}/correct", resamples)}
    for name in (*SET_METRICS, *RANK_METRICS):
        scores = values(name)
        if scores:
            out[name] = _mean(scores)
            out[f"{name}_ci95"] = bootstrap_ci(scores, f"{BENCHMARK}/{seed_key}/{name}", resamples)
    for name in ("error", "truncated", "parse_failure"):
        out[f"{name}_rate"] = _mean(values(name if name != "parse_failure" else "parse_failure_rate"))
    for name in ("consistency", "first_position_rate"):
        if values(name):
            out[name] = _mean(values(name))
    positions = sorted(int(m[2:]) for m in groups if m.startswith("gt") and m[2:].isdigit()
                       and any(groups[m].get(cell) for cell in cells))
    if positions:
        out["by_gt_position"] = {
            str(p): {"value": _mean(values(f"gt{p}")), "n": len(values(f"gt{p}")),
                     "ci95": bootstrap_ci(values(f"gt{p}"), f"{BENCHMARK}/{seed_key}/gt{p}", resamples)}
            for p in positions}
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


# ---------------------------------------------------------------------------------------------- tables

def table_text(metrics: list[dict[str, Any]]) -> str:
    """Table 3 layout: one row per model x condition, sets (P, R, F1) and ranks (NDCG@1, NDCG@5, MRR@5) in
    separate blocks, a column group per dataset, percentages with their 95% intervals; then the Figure 5
    table: the score by position of the ground-truth passage; then Table 4 (GTU answers per evidence
    source)."""
    blocks = []
    for title, forms, names in (("Evidence sets (pointwise, listwise-set)", SET_FORMS, SET_METRICS),
                                ("Evidence rankings (pairwise, listwise-rank)", RANK_FORMS, RANK_METRICS)):
        entries = [(m, c, e) for m in metrics for c, e in sorted(m.get("conditions", {}).items())
                   if e["form"] in forms]
        if not entries:
            continue
        subsets = sorted({s for _, _, e in entries for s in e["subsets"]})
        head = ["Model", "Condition"] + [f"{s} {METRIC_TITLES[n]}" for s in subsets for n in names] + ["n", "parse fail"]
        rows = []
        for m, condition, entry in entries:
            cells = [_pct_ci(entry["subsets"].get(s, {}), n) for s in subsets for n in names]
            rows.append([m.get("model", "?"), condition, *cells, str(entry["all"]["n"]),
                         _pct(entry["all"].get("parse_failure_rate"))])
        blocks.append(f"Utility judgments: {title}, % macro over questions [95% CI]\n" + aligned([head, *rows], left=2))
    position_rows = []
    for m in metrics:
        for condition, entry in sorted(m.get("conditions", {}).items()):
            for subset, cell in sorted(entry["subsets"].items()):
                if cell.get("by_gt_position"):
                    position_rows.append((m.get("model", "?"), condition, subset, entry["metric"],
                                          cell["by_gt_position"]))
    if position_rows:
        positions = sorted({int(p) for *_, by in position_rows for p in by}, key=int)
        head = ["Model", "Condition", "Dataset", "Metric"] + [f"@{p}" for p in positions]
        rows = [[model, condition, subset, METRIC_TITLES[metric],
                 *[_pct(by.get(str(p), {}).get("value")) for p in positions]]
                for model, condition, subset, metric, by in position_rows]
        blocks.append("Score by position of the ground-truth passage in the listwise input (Figure 5), %\n"
                      + aligned([head, *rows], left=4))
    if qa_rows := gtu.qa_table(metrics, _pct_ci):
        blocks.append("GTU answers on each evidence source (Table 4), % macro over questions [95% CI]; "
                      "passages: mean number handed over\n" + aligned(qa_rows, left=2))
    notes = [f"  {m.get('model', '?')}: {m['n_errors']} condition rows not scored (failed requests); see errors/"
             for m in metrics if m.get("n_errors")]
    notes += [f"  {m['model']}: {m['note']}" for m in metrics if m.get("note")]
    return "\n\n".join(blocks + (["Notes:\n" + "\n".join(notes)] if notes else []))


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _pct_ci(cell: Mapping[str, Any], name: str) -> str:
    if cell.get(name) is None:
        return "-"
    ci = cell.get(f"{name}_ci95")
    return _pct(cell[name]) + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "")




__all__ = [
    "BENCHMARK",
    "KINDS",
    "answer_prompt",
    "check_options",
    "combine",
    "expand",
    "followup",
    "group_key",
    "k_sampling_evidence",
    "load_items",
    "measures",
    "row_key",
    "settings",
    "shuffles",
    "summarize",
    "table_text",
    "top_m",
]
