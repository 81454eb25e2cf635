"""stand_in: an instant engine without Ray or weights, the way inspect_ai ships a mock model, for tests and dry
runs of a benchmark's rounds."""
from __future__ import annotations

from collections.abc import Iterator

from benchmarks.protocol import Answer, Request
from benchmarks.row_types import ANSWER_BASE_KEYS
from jobs.config import ModelConfig
from jobs.engines.base import Engine, Log, Servers, register


def stand_in_reply(request: Request) -> str:
    """The stand-in's text: 'answer to <the first message>', so a test can tell which request it answers."""
    messages = request.get("messages") or [{"content": ""}]
    return f"answer to {messages[0]['content']}"


class StandIn(Engine):
    name = "stand_in"
    weights = False
    unvalidated = "stand-in engine: no model"

    def writes(self, model: ModelConfig) -> frozenset[str]:
        return ANSWER_BASE_KEYS | {"text"}  # whatever the model's kind

    def answer(self, requests: list[Request], model: ModelConfig, log: Log, host: Servers) -> Iterator[Answer]:
        """Every request answered at once, in order, with stand_in_reply."""
        for r in requests:
            yield {"request_id": r["request_id"], "item_id": r["item_id"], "subset": r["subset"],
                   "variant": r["variant"], "text": stand_in_reply(r), "error": None}


register(StandIn())
