"""A three-round protocol for tests of a cell's rounds (generate, judge the generation, then a verdict on the
judgment), registered by a test as benchmark module `rounds_stub`."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from benchmarks import protocol
from jobs.config import BenchmarkConfig


def _request(item, variant, prompt):
    return {"request_id": f"{item['item_id']}#{variant}", "item_id": item["item_id"], "subset": "s",
            "variant": variant, "messages": [{"role": "user", "content": prompt}]}


@dataclass(frozen=True)
class StubOptions:
    endless: bool = False  # followup never settles
    routed: bool = False  # the second round goes to the judge named 'critic'


class RoundsStub(protocol.Benchmark):
    """A three-round protocol: a generation, a judgment of it, then a verdict on the judgment."""

    name, kinds, Options, fields = "stub", ("generative",), StubOptions, ()

    def load_items(self, path, columns=None):
        return iter([{"item_id": f"stub/{i}", "subset": "s", "error": None} for i in range(3)])

    def expand(self, item, kind, options):
        return [_request(item, "generate", f"question {item['item_id']}")]

    def followup(self, item, answers, kind, options):
        by_variant = {a["variant"]: a for a in answers}
        if options.endless:
            return [_request(item, f"again{len(answers)}", "more")]
        if options.routed:
            return [{**_request(item, "judge", "judge it"), "route": "critic"}]
        out = [_request(item, "judge", f"judge: {by_variant['generate']['text']}")]
        if "judge" in by_variant:
            out.append(_request(item, "verdict", f"verdict on: {by_variant['judge']['text']}"))
        return out

    def routes(self, options):
        return ["critic"] if options.routed else []

    def combine(self, item, answers, kind, options, verdict=None):
        by_variant = {a["variant"]: a["text"] for a in answers}
        return {"item_id": item["item_id"], "subset": "s", "error": None, "texts": by_variant,
                "correct": float(len(by_variant) == 3)}

    def measures(self, row):
        return {"correct": row["correct"]}

    def summarize(self, groups, resamples=0):
        return {"n": len(groups["correct"]["s"]), "n_errors": 0,
                "accuracy": sum(v for _, v in groups["correct"]["s"]) / 3}

    def table_text(self, metrics):
        return ""


def register(monkeypatch: pytest.MonkeyPatch) -> Callable[..., BenchmarkConfig]:
    """Register the stub for the test; returns a factory of its benchmark config, taking its options."""
    monkeypatch.setitem(protocol.BENCHMARKS, "rounds_stub", RoundsStub)
    return lambda **options: BenchmarkConfig(name="stub", module="rounds_stub", data=["unused"],
                                             bootstrap_resamples=0, options=options)
