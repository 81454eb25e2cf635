"""stand_in: an instant engine without Ray or weights, the way inspect_ai ships a mock model, for tests and dry
runs of a benchmark's rounds."""
from __future__ import annotations

from collections.abc import Callable, Iterator

from benchmarks.protocol import Answer, Request
from benchmarks.row_types import ANSWER_BASE_KEYS
from jobs.config import ModelConfig
from jobs.engines.base import Engine, Log, Servers, register


def stand_in_reply(request: Request, model: ModelConfig | None = None) -> str:
    """The stand-in's text: 'answer to <the first message>', so a test can tell which request it answers."""
    messages = request.get("messages") or [{"content": ""}]
    return f"answer to {messages[0]['content']}"


# What the stand-in says to a request of a model: its text, in the answer's `text`.
Reply = Callable[[Request, ModelConfig], str]


class StandIn(Engine):
    """`reply` is the text each request gets (stand_in_reply's unless set): the one hook a test sets on the
    registered engine to give a cell its own answers while this engine's own code answers (tests/stand_in.py)."""
    name = "stand_in"
    weights = False
    unvalidated = "stand-in engine: no model"
    reply: Reply = staticmethod(stand_in_reply)

    def writes(self, model: ModelConfig) -> frozenset[str]:
        return ANSWER_BASE_KEYS | {"text"}  # whatever the model's kind

    def answer(self, requests: list[Request], model: ModelConfig, log: Log, host: Servers) -> Iterator[Answer]:
        """Every request answered at once, in order, with self.reply."""
        for r in requests:
            yield {"request_id": r["request_id"], "item_id": r["item_id"], "subset": r["subset"],
                   "variant": r["variant"], "text": self.reply(r, model), "error": None}


register(StandIn())
