"""Utility-judgment metrics (docs/protocols.md 4): evidence sets and rankings against ground-truth labels, the
k-sampling votes, and GTU answer metrics. Pure functions on passage indices and strings.

Indices are positions in the item's ORIGINAL passage list; labels are 0/1 per passage (1 = ground truth).
"""
from __future__ import annotations

import collections
import math
import re
import string
from collections.abc import Sequence


def set_prf(selected: Sequence[int], labels: Sequence[int]) -> tuple[float, float, float]:
    """Precision, recall and F1 of a selected evidence set. An empty selection scores (0, 0, 0), and so does
    an item without ground truth: there is nothing to find, so nothing can be found."""
    chosen = set(selected)
    hits = sum(1 for i in chosen if labels[i])
    relevant = sum(1 for label in labels if label)
    precision = hits / len(chosen) if chosen else 0.0
    recall = hits / relevant if relevant else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def ndcg_at_k(ranking: Sequence[int], labels: Sequence[int], k: int) -> float:
    """NDCG@k with binary gains and a log2(rank + 1) discount; 0 when no passage is relevant.

    `ranking` holds distinct indices, best first; it may be shorter than k (a partial ranking), and the
    passages it leaves out gain nothing. The ideal ranking puts all relevant passages first.
    """
    dcg = sum(1.0 / math.log2(rank + 2) for rank, i in enumerate(ranking[:k]) if labels[i])
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(k, sum(1 for label in labels if label))))
    return dcg / ideal if ideal else 0.0


def mrr_at_k(ranking: Sequence[int], labels: Sequence[int], k: int) -> float:
    """Reciprocal rank of the first relevant passage within the top k; 0 when there is none."""
    return next((1.0 / (rank + 1) for rank, i in enumerate(ranking[:k]) if labels[i]), 0.0)


def vote_sets(selections: list[list[int]]) -> list[int]:
    """The k-sampling set vote: indices selected in more than half of the lists, ascending.

    Exactly half is not a majority (2 of 4 lists loses). An unparseable answer is passed as an empty list, so
    it counts as a vote for nothing rather than shrinking the electorate.
    """
    counts = collections.Counter(i for selection in selections for i in set(selection))
    return sorted(i for i, c in counts.items() if c > len(selections) / 2)


def vote_ranks(rankings: list[list[int]]) -> list[int]:
    """The k-sampling rank vote: passages ordered by their mean reciprocal rank over the k rankings.

    A passage missing from a ranking (partial or unparseable answer, passed as []) gets 0 from it; passages
    no ranking mentions are left out, so nothing is ranked by default. Ties go to the passage placed higher
    in the earliest ranking that places the two differently (a missing passage counts as placed last); the
    rankings come from random shuffles, so this favours no original position.
    """
    positions = [{i: rank for rank, i in enumerate(ranking)} for ranking in rankings]
    mentioned = {i for ranking in rankings for i in ranking}
    score = {i: sum(1.0 / (p[i] + 1) for p in positions if i in p) / len(rankings) for i in mentioned}
    return sorted(mentioned, key=lambda i: (-score[i], *(p.get(i, math.inf) for p in positions)))


def rank_by_wins(wins: list[tuple[int, int]], tie_order: Sequence[int] | None = None) -> list[int]:
    """The pairwise ranking: passages by the number of comparisons they won, most first.

    `wins` holds one (winner, loser) per parsed comparison (both orders of every pair, so each pair counts
    twice); an unparseable comparison gives no win and is left out. Passages in no parsed comparison are left
    out. Ties follow `tie_order` (a seeded shuffle in `combine`, so no original position is favoured);
    without one, the lower index first.
    """
    counts = collections.Counter(winner for winner, _ in wins)
    seen = {i for pair in wins for i in pair}
    rank_of = {i: r for r, i in enumerate(tie_order)} if tie_order is not None else {}
    return sorted(seen, key=lambda i: (-counts[i], rank_of.get(i, math.inf), i))


def k_sampling_evidence(selections: list[list[int]]) -> list[int]:
    """The evidence of the paper's k-sampling QA runs (Section 5): as many passages as the most frequent
    selection over the k runs holds (the earliest such selection on a tie), taken by vote count, most first;
    equal counts go to the passage selected first across the runs."""
    sets = [tuple(sorted(set(s))) for s in selections]
    most_common = collections.Counter(sets)
    size = len(max(sets, key=lambda s: (most_common[s], -sets.index(s)))) if sets else 0
    counts = collections.Counter(i for s in sets for i in s)
    first_seen: dict[int, int] = {}
    for i in (i for s in selections for i in s):
        first_seen.setdefault(i, len(first_seen))
    return sorted(counts, key=lambda i: (-counts[i], first_seen[i]))[:size]


def top_m(selected_or_ranked: Sequence[int], m: int) -> list[int]:
    """The first m passages of a ranking or ordered selection: every method hands the answer generator the
    same number of passages (Section 5, "to ensure fairness")."""
    return list(selected_or_ranked[:m])


# SQuAD answer normalisation and token F1, as in the SQuAD v1.1 evaluation script and the authors' utils
# (lower case, drop punctuation and articles, collapse whitespace). A dozen lines, so written here rather
# than pulling in a large evaluation package for them.
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    """1.0 when the normalised prediction equals a normalised gold answer; 0.0 without gold answers."""
    return max((float(normalize_answer(prediction) == normalize_answer(a)) for a in answers), default=0.0)


def token_f1(prediction: str, answers: Sequence[str]) -> float:
    """SQuAD token F1, best over the gold answers. An empty side scores 1 only when both are empty."""
    def f1(gold: str) -> float:
        gold_tokens, pred_tokens = normalize_answer(gold).split(), normalize_answer(prediction).split()
        if not gold_tokens or not pred_tokens:
            return float(gold_tokens == pred_tokens)
        same = sum((collections.Counter(gold_tokens) & collections.Counter(pred_tokens)).values())
        if not same:
            return 0.0
        precision, recall = same / len(pred_tokens), same / len(gold_tokens)
        return 2 * precision * recall / (precision + recall)

    return max((f1(a) for a in answers), default=0.0)


def rouge_l(prediction: str, answers: Sequence[str]) -> float:
    """ROUGE-L F-measure (rouge-score, no stemming), best over the gold answers; 0.0 without gold answers."""
    from rouge_score import rouge_scorer  # imported on use: only GTU answer scoring needs it

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    return max((scorer.score(a, prediction)["rougeL"].fmeasure for a in answers), default=0.0)


def bleu(prediction: str, answers: Sequence[str]) -> list[float]:
    """Sentence BLEU-1..4 in [0, 1] (sacrebleu, lower-cased, 13a tokens, exp smoothing, effective order)
    against all gold answers as references: a per-item value the reducer can average and bootstrap."""
    from sacrebleu.metrics import BLEU  # imported on use: only GTU answer scoring needs it

    return [BLEU(max_ngram_order=n, lowercase=True, effective_order=True).sentence_score(prediction, list(answers))
            .score / 100 for n in range(1, 5)]


def corpus_bleu(predictions: Sequence[str], answers: Sequence[Sequence[str]]) -> list[float]:
    """Corpus BLEU-1..4 in [0, 1] (sacrebleu, lower-cased, 13a tokens), the MS MARCO way of reporting BLEU:
    n-gram counts pooled over all items, each item with its own (variable) number of gold answers."""
    from sacrebleu.metrics import BLEU

    width = max((len(a) for a in answers), default=0)
    streams = [[a[r] if r < len(a) else None for a in answers] for r in range(width)]
    return [BLEU(max_ngram_order=n, lowercase=True).corpus_score(list(predictions), streams).score / 100
            for n in range(1, 5)]
