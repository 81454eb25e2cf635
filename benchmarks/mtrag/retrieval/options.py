"""mtRAG retrieval options: which domains and query strategies a cell runs, how deep it ranks, when dense
search turns approximate, and our own LLM rewrite (docs/protocols.md 3: "prompt of our own, few-shot, in
config")."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from benchmarks.mtrag.common import DOMAINS, domain
from benchmarks.mtrag.retrieval.scoring import K_VALUES

LLM_REWRITE = "llm_rewrite"  # our own: a generative model of the registry rewrites the last turn
Strategy = Literal["lastturn", "rewrite", "questions", "llm_rewrite"]


@dataclass(frozen=True)
class Ann:
    """The faiss HNSW index of a large dense corpus: graph degree and build / search breadth."""

    m: int = 32
    ef_construction: int = 200
    ef_search: int = 256


@dataclass(frozen=True)
class RewriteExample:
    history: list[str]  # the earlier user turns
    question: str  # the last one
    rewrite: str  # the standalone question the model should answer with


@dataclass(frozen=True)
class RewritePrompt:
    """A few-shot chat: `system`, each example as a user/assistant exchange, then the conversation in `user`
    ({history}: the earlier user turns, one a line and numbered; {question}: the last one)."""

    system: str
    user: str
    examples: list[RewriteExample] = field(default_factory=list)


# Our prompt. The examples are made up, not taken from mtRAG, so no test conversation leaks into the prompt.
REWRITE_PROMPT = RewritePrompt(
    system=("You rewrite the last question of a conversation into a standalone question that can be understood "
            "without the conversation. Keep its meaning, replace pronouns and vague references with what they "
            "refer to in the earlier questions, add nothing else. Answer with the rewritten question only."),
    user="Earlier questions:\n{history}\nLast question: {question}",
    examples=[
        RewriteExample(history=["Who wrote the novel Dune?"], question="When was it published?",
                       rewrite="When was the novel Dune published?"),
        RewriteExample(history=["How do I open a savings account?", "What documents do I need?"],
                       question="Can I do it online?", rewrite="Can I open a savings account online?"),
        RewriteExample(history=["What is a virtual server?"], question="how much per month",
                       rewrite="How much does a virtual server cost per month?"),
    ],
)


@dataclass(frozen=True)
class Options:
    domains: list[str] = field(default_factory=lambda: list(DOMAINS))  # short or long collection names
    strategies: list[Strategy] = field(default_factory=lambda: ["lastturn", "rewrite", "questions"])
    top_k: int = 10  # the script scores @1, 3, 5, 10
    ann_threshold: int = 100_000  # dense: passages from which on a faiss HNSW index replaces exact search
    ann: Ann = field(default_factory=Ann)
    # llm_rewrite: the generative model (a conf/models name, or a model mapping; jobs reads it) and its prompt
    rewriter: Any = None
    rewrite_prompt: RewritePrompt | None = None  # null: REWRITE_PROMPT; a mapping replaces it whole
    rewrite_max_tokens: int = 64


def option_problems(options: Options) -> list[str]:
    """What the types cannot say: known domains, something to run, a rewriter where llm_rewrite asks for one,
    a prompt with the question in it, and depths the script can score."""
    problems = []
    for name in options.domains:
        try:
            domain(name)
        except ValueError as e:
            problems.append(f"options.domains: {e}")
    if not options.domains:
        problems.append("options.domains: name at least one domain")
    if LLM_REWRITE in options.strategies and not options.rewriter:
        problems.append("options.rewriter: llm_rewrite needs a generative model (a conf/models name or a mapping)")
    elif options.rewriter is not None and not isinstance(options.rewriter, (str, Mapping)):
        problems.append("options.rewriter: expected a conf/models name or a model mapping, got "
                        f"{options.rewriter!r}")
    if "{question}" not in rewrite_prompt(options).user:
        problems.append("options.rewrite_prompt.user: must contain {question}")
    if not options.strategies:
        problems.append("options.strategies: name at least one strategy")
    for key in ("top_k", "ann_threshold"):
        if getattr(options, key) < 1:
            problems.append(f"options.{key}: expected a positive integer, got {getattr(options, key)!r}")
    if options.top_k < max(K_VALUES):
        problems.append(f"options.top_k: {options.top_k} is below {max(K_VALUES)}, the deepest cut scored")
    return problems


def rewrite_prompt(options: Options) -> RewritePrompt:
    """The rewrite prompt in force: the configured one, else ours."""
    return options.rewrite_prompt or REWRITE_PROMPT


def short_domains(options: Options) -> list[str]:
    """The domains' short names, each once, in the order first named."""
    return list(dict.fromkeys(domain(d) for d in options.domains))


def strategies(options: Options) -> list[str]:
    """The strategies, each once, in the order first named."""
    return list(dict.fromkeys(options.strategies))
