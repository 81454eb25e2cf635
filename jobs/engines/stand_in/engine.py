"""stand_in: an instant engine without weights, the way inspect_ai ships a mock model, for tests and dry runs of
a benchmark's rounds. A list of requests is answered at once (no Ray needed); a Ray dataset (a cell's first round
on the sweep's cluster) as its blocks arrive, one at a time, so the driver holds a block, never the round."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from benchmarks.protocol import Answer, Request
from benchmarks.row_types import ANSWER_BASE_KEYS
from jobs.config import ModelConfig
from jobs.engines.base import Engine, Log, Requests, Servers, register
from jobs.engines.rows import dataset_rows


def stand_in_reply(request: Request, model: ModelConfig | None = None) -> str:
    """The stand-in's text: 'answer to <the first message>', so a test can tell which request it answers."""
    messages = request.get("messages") or [{"content": ""}]
    return f"answer to {messages[0]['content']}"


# What the stand-in says to a request of a model: its text, in the answer's `text`.
Reply = Callable[[Request, ModelConfig], str]


def stand_in_answers(requests: Iterable[Request], model: ModelConfig,
                     reply: Reply = stand_in_reply) -> Iterator[Answer]:
    """Each request answered with reply(request, model), in order, after the turn's `continue_text` where it has
    one (as every engine that continues a turn writes it: the text is the whole turn's)."""
    for r in requests:
        yield {"request_id": r["request_id"], "item_id": r["item_id"], "subset": r["subset"],
               "variant": r["variant"], "text": (r.get("continue_text") or "") + reply(r, model), "error": None}


class StandIn(Engine):
    """`reply` is the text each request gets (stand_in_reply's unless set): the one hook a test sets on the
    registered engine to give a cell its own answers while this engine's own code answers (tests/stand_in.py)."""
    name = "stand_in"
    weights = False
    streams = True
    continues_turns = True
    unvalidated = "stand-in engine: no model"
    reply: Reply = staticmethod(stand_in_reply)

    def writes(self, model: ModelConfig) -> frozenset[str]:
        return ANSWER_BASE_KEYS | {"text"}  # whatever the model's kind

    def answer(self, requests: Requests, model: ModelConfig, log: Log, host: Servers) -> Iterator[Answer]:
        """A list answered at once; a dataset block by block as its read task makes them, in this process, so a
        test's reply (a closure with state of its own) answers either."""
        if isinstance(requests, list):
            return stand_in_answers(requests, model, self.reply)
        return stand_in_answers(dataset_rows(requests), model, self.reply)


register(StandIn())
