"""Synthetic pairs shaped like RAG-RewardBench, for sizing and timing runs; never a benchmark result.

The real 1,485 pairs are not bundled, and the six Appendix D examples are abridged, so perf runs and
`ragjudge plan` need stand-ins of the right shape: Table 4's subset sizes and mean token lengths of prompt,
chosen and rejected (`data/rag_rewardbench_table4.json`, copied from the paper with its source). The text is
real: a prompt is the dataset's prompt layout (Appendix D) filled with passages of the bundled mtRAG corpora
and a real mtRAG question; the chosen response is text of those passages and the rejected one text of
passages not in the prompt. Neither is an answer, so no accuracy on these pairs means anything: every row
has `synthetic: true`, an id and a subset starting with `synthetic-` and models named `synthetic`, and
metrics keep synthetic subsets out of every Table 2 column.

Lengths. An item's target is the Table 4 mean x `scale` x a spread factor. Factors come in antithetic pairs
(1 + d, 1 - d), d uniform in [0, spread), and an odd subset's last item takes the mean itself, so a full
subset has Table 4's means, and so does a `max_pairs` sample with an even cap. A capped sample is a prefix of
the full set (item k is the same text at any cap). Tokens are counted by `count`: by default characters / 4
(`estimate_tokens`, the rule `ragjudge plan` uses without a tokenizer; the paper does not name its
tokenizer), or a real tokenizer's count passed in by a script. A prompt never drops below its fixed parts
(the instruction and the question: 30 to 89 tokens, median 42), which binds for some items below a scale of
about 0.1.

Determinism: every choice is seeded from the item id (or the pair's index), so the same arguments give the
same rows on any machine.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from benchmarks.mtrag.common import DOMAINS
from benchmarks.mtrag.retrieval.data import load_corpus, load_queries
from benchmarks.paths import project_path
from benchmarks.rag_rewardbench.load import SYNTHETIC

TABLE4 = "data/rag_rewardbench_table4.json"
CORPUS = "data/mtrag/corpus/{domain}.jsonl.gz"
QUESTIONS = "data/mtrag/retrieval/{domain}/rewrite.jsonl"  # the authors' standalone rewrites of each turn
MODEL = "synthetic"
CHARS_PER_TOKEN = 4.0
SPREAD = 0.4
# The dataset's prompt layout, as its Appendix D examples print it.
# Each part after the head starts with its separating whitespace, so a prompt cut after any word still reads.
PROMPT_HEAD = "## References"
REFERENCE = "\n{sep}Reference [{k}]\nTitle: {title}\nText: {text}"
PROMPT_TAIL = ("\n\nUsing the references listed above, answer the following question in detail.\n"
               "## Question: {question}\n## Response:")
# A word (long ones, such as URLs, in 12-character runs) with the whitespace before it: pieces join back to
# the text, and a cut lands within a few characters of any target.
_PIECE = re.compile(r"\s*\S{1,12}")

Count = Callable[[str], int]


@dataclass(frozen=True)
class SubsetShape:
    """One row of Table 4: a subset's size and mean token lengths."""

    category: str
    subset: str
    n: int
    prompt: int
    chosen: int
    rejected: int

    @property
    def name(self) -> str:
        """The synthetic subset's name, e.g. 'synthetic-reason-multihop-rag' (our spelling, not the
        release's)."""
        return f"{SYNTHETIC}{self.category.lower()}-{self.subset.lower()}"


def estimate_tokens(text: str) -> int:
    """Characters / 4, rounded: English text's usual ratio, and what `ragjudge plan` assumes untokenized."""
    return round(len(text) / CHARS_PER_TOKEN)


def table4(path: str = TABLE4) -> list[SubsetShape]:
    """The paper's Table 4, one shape per row, in the table's order."""
    with open(project_path(path), encoding="utf-8") as f:
        table = json.load(f)
    return [SubsetShape(*row) for row in table["rows"]]


@lru_cache(maxsize=4)
def _domain_text(domain: str) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(passages as (id, title, text) in file order, standalone questions) of one bundled mtRAG domain."""
    corpus = load_corpus(str(project_path(CORPUS.format(domain=domain)))).data
    questions = load_queries(str(project_path(QUESTIONS.format(domain=domain))), strip_tags=True).data
    passages = [(pid, p["title"], p["text"]) for pid, p in corpus.items() if p["text"].strip()]
    return passages, [q for q in questions.values() if q.strip()]


def seeded(key: str) -> random.Random:
    """A generator seeded from a string (sha256, not hash(): that one changes per process)."""
    return random.Random(int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big"))


def fit(pieces: Sequence[str], head: str, tail: str, target: int, count: Count) -> str:
    """head + the first n pieces + tail, with n chosen so its count is nearest `target` (never below head +
    tail). Counts grow with n, so a binary search needs about log2(len(pieces)) counts."""
    def text(n: int) -> str:
        return head + "".join(pieces[:n]) + tail

    low, high = 0, len(pieces)  # the largest n whose count is <= target lies in [low, high]
    if count(text(high)) <= target:
        return text(high)
    while low < high:
        mid = (low + high + 1) // 2
        if count(text(mid)) <= target:
            low = mid
        else:
            high = mid - 1
    under, over = text(low), text(low + 1)
    return over if count(over) - target < target - count(under) else under


def fill(blocks: Iterator[str], head: str, tail: str, target: int, count: Count) -> tuple[str, int]:
    """head + whole blocks while the count stays within `target`, then as many words of the next block as
    bring it nearest the target, + tail; and how many blocks contributed. Only the cut block is split into
    words, which keeps a full-size set to a few seconds."""
    body, used = "", 0
    for block in blocks:
        if count(head + body + block + tail) <= target:
            body, used = body + block, used + 1
            continue
        text = fit(_PIECE.findall(block), head + body, tail, target, count)
        return text, used + (len(text) > len(head + body + tail))
    return head + body + tail, used


def draws(rng: random.Random, passages: Sequence[tuple[str, str, str]]) -> Iterator[tuple[str, str, str]]:
    """Passages drawn at random, none twice until all have been (a huge target on a small corpus repeats);
    drawn one at a time, as shuffling a whole corpus per item would cost more than the item."""
    used: set[int] = set()
    while True:
        if len(used) == len(passages):
            used.clear()
        i = rng.randrange(len(passages))
        if i not in used:
            used.add(i)
            yield passages[i]


def references(passages: Iterator[tuple[str, str, str]], taken: list[tuple[str, str, str]]) -> Iterator[str]:
    """The prompt's reference blocks, each passage recorded in `taken` as it is handed out."""
    for k, passage in enumerate(passages, 1):
        taken.append(passage)
        yield REFERENCE.format(sep="\n" if k > 1 else "", k=k, title=passage[1], text=passage[2])


def prose(passages: Iterator[tuple[str, str, str]]) -> Iterator[str]:
    """Passage texts as one paragraph of running text (whitespace collapsed), for a response."""
    for k, passage in enumerate(passages):
        yield (" " if k else "") + " ".join(passage[2].split())


def targets(shape: SubsetShape, index: int, scale: float, spread: float) -> dict[str, int]:
    """The token targets of a subset's item `index`: items 2j and 2j+1 share |d| with opposite signs, and an
    odd subset's last item (unpaired) gets the mean itself, so a full subset averages Table 4's means."""
    rng = seeded(f"{shape.name}/pair{index // 2}")
    sign = 0 if index == shape.n - 1 and shape.n % 2 else 1 if index % 2 == 0 else -1
    means = (("prompt", shape.prompt), ("chosen", shape.chosen), ("reject", shape.rejected))
    return {field: max(1, round(mean * scale * (1 + sign * rng.uniform(0.0, spread))))
            for field, mean in means}


def pair(shape: SubsetShape, index: int, scale: float = 1.0, spread: float = SPREAD,
         count: Count = estimate_tokens) -> dict:
    """Item `index` of a subset: a row in the dataset's schema, labelled synthetic, its passages named."""
    item_id = f"{shape.name}-{index:04d}"
    rng = seeded(item_id)
    domain = DOMAINS[rng.randrange(len(DOMAINS))]
    passages, questions = _domain_text(domain)
    tail = PROMPT_TAIL.format(question=questions[rng.randrange(len(questions))])
    want = targets(shape, index, scale, spread)
    pool = draws(rng, passages)
    taken: list[tuple[str, str, str]] = []
    prompt, n_references = fill(references(pool, taken), PROMPT_HEAD, tail, want["prompt"], count)
    cited = taken[:n_references]
    # chosen: text of the prompt's own references (more passages if they run short); reject: other passages
    chosen, _ = fill(prose(itertools.chain(cited, pool)), "", "", want["chosen"], count)
    reject, _ = fill(prose(pool), "", "", want["reject"], count)
    return {"id": item_id, "subset": shape.name, "prompt": prompt, "chosen": chosen, "reject": reject,
            "chosen_model": MODEL, "reject_model": MODEL, "synthetic": True, "domain": domain,
            "passages": [p[0] for p in cited], "targets": want}


def generate(scale: float = 1.0, max_pairs: int | None = None, spread: float = SPREAD,
             count: Count = estimate_tokens, shapes: Sequence[SubsetShape] | None = None) -> Iterator[dict]:
    """Every synthetic pair: Table 4's subsets in order, at most `max_pairs` each, lengths x `scale`."""
    if scale <= 0 or not 0 <= spread < 1 or (max_pairs is not None and max_pairs < 1):
        raise ValueError(f"scale must be > 0, spread in [0, 1), max_pairs >= 1 (got {scale}, {spread}, "
                         f"{max_pairs})")
    for shape in shapes if shapes is not None else table4():
        for index in range(shape.n if max_pairs is None else min(shape.n, max_pairs)):
            yield pair(shape, index, scale, spread, count)


def summary(rows: Sequence[dict], count: Count = estimate_tokens) -> dict[str, dict[str, float]]:
    """Per subset: pairs and mean token lengths of prompt, chosen and reject, as `count` counts them."""
    out: dict[str, dict[str, float]] = {}
    for subset in dict.fromkeys(r["subset"] for r in rows):
        mine = [r for r in rows if r["subset"] == subset]
        out[subset] = {"n": len(mine), **{field: sum(count(r[field]) for r in mine) / len(mine)
                                          for field in ("prompt", "chosen", "reject")}}
    return out
