"""The judgment requests of an item: per condition, one request a passage (pointwise), an ordered pair
(pairwise) or a seeded shuffle (listwise); each carries the permutation that maps its prompt positions back to
the item's original passages."""
from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from typing import Any

from benchmarks.row_types import Item, Request
from benchmarks.stats import stable_seed
from benchmarks.utility.options import Condition, Options, Plan
from benchmarks.utility.prompts import judgment_messages

MAX_REDRAWS = 100  # a shuffle equal to an earlier one is redrawn (seeded) up to this often: few passages


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
                first = next(p for p, i in enumerate(permutation) if i in gold)
                permutation[first], permutation[gt_position] = permutation[gt_position], permutation[first]
            if permutation not in out:
                break
        out.append(permutation)
    return out


def pairs(item: Mapping[str, Any], max_pairs: int | None) -> list[tuple[int, int]]:
    """Ordered pairs (Passage-0, Passage-1) to compare: every unordered pair (or `max_pairs` of them, seeded)
    in both orders, so position bias cancels."""
    unordered = list(itertools.combinations(range(len(item["passages"])), 2))
    if max_pairs is not None and max_pairs < len(unordered):
        unordered = sorted(random.Random(stable_seed(item["item_id"], "pairs")).sample(unordered, max_pairs))
    return [pair for i, j in unordered for pair in ((i, j), (j, i))]


def condition_problem(item: Mapping[str, Any], condition: Condition) -> str | None:
    """Why a condition cannot run on this item (a fixed ground-truth position it cannot honour)."""
    p = condition.gt_position
    if p is not None and p >= len(item["passages"]):
        return f"gt_position {p} is beyond the item's {len(item['passages'])} passages"
    if p is not None and not any(item["labels"]):
        return f"gt_position {p}: the item has no ground-truth passage to place"
    return None


def units(item: Mapping[str, Any], condition: Condition, options: Options) -> list[tuple[str, list[int]]]:
    """(unit tag, permutation) of each request of a condition: the passages shown, in prompt order."""
    if condition.form == "pointwise":
        return [(f"p{i}", [i]) for i in range(len(item["passages"]))]
    if condition.form == "pairwise":
        return [(f"p{i}v{j}", [i, j]) for i, j in pairs(item, options.max_pairs)]
    return [(f"s{s + 1}", perm) for s, perm in enumerate(shuffles(item, options.k, condition.gt_position))]


def judgment_requests(item: Item, options: Options, plan: Plan) -> list[Request]:
    """The requests of every condition of one item, condition by condition (adjacent: one prefix cache)."""
    requests = []
    for condition in plan.conditions:
        if condition_problem(item, condition):
            continue
        for unit, permutation in units(item, condition, options):
            messages = judgment_messages(plan.prompts, condition.form, condition.wording, condition.order,
                                         condition.requirement, item["question"],
                                         [item["passages"][i] for i in permutation])
            requests.append(request(item, f"{condition.key}/{unit}", permutation, messages, options))
    return requests


def request(item: Item, variant: str, permutation: list[int], messages: list[dict[str, str]],
            options: Options) -> Request:
    """One request; judgment and answer requests carry the same keys (each round is one set of Arrow columns).
    `permutation` holds the original indices of the passages shown, in prompt order."""
    out = {"request_id": f"{item['item_id']}#{variant}", "item_id": item["item_id"],
           "subset": item["subset"], "variant": variant, "permutation": permutation, "messages": messages}
    if options.temperature is not None:
        out["temperature"] = float(options.temperature)
        out["seed"] = stable_seed(out["request_id"]) % 2**31
    if options.max_tokens is not None:
        out["max_tokens"] = options.max_tokens
    return out
