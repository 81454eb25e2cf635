"""`ragjudge fetch` where the Hub does not answer, with the real huggingface_hub client: an endpoint that accepts
connections and never answers is given up on within the request bound (HF_HUB_ETAG_TIMEOUT), with lines while it
waits, and the repositories after it are not asked; an endpoint that refuses connections is named per repository,
and the summary counts what could not be fetched (exit 1)."""
from __future__ import annotations

import threading
import time
from pathlib import Path

from hub_server import fake_hub, silent_endpoint
from sweeps import write_sweep

from jobs.cli import main
from jobs.engines import hub_requests

BOUND_S = 2  # HF_HUB_ETAG_TIMEOUT for these tests


def _sweep(tmp_path: Path) -> str:
    return str(write_sweep(tmp_path, "fetch", [
        '{name: rm, path: "org/rm", kind: discriminative, engine: transformers, tokenizer: "org/tok"}',
        '{name: policy, path: "org/rm", kind: implicit, reference: "org/base", vllm: {enforce_eager: true}}']))


def _fetch(sweep: str, within_s: float) -> tuple[int | None, float]:
    """fetch's exit status (None if it was still waiting after `within_s`) and the seconds it took; in a thread,
    so that a fetch that never gives up fails the test instead of hanging it."""
    result: list[int] = []
    start = time.monotonic()
    thread = threading.Thread(target=lambda: result.append(main(["fetch", sweep])), daemon=True)
    thread.start()
    thread.join(within_s)
    return (result[0] if result else None), time.monotonic() - start


def test_a_hub_that_never_answers_is_given_up_on_within_the_bound_with_lines_while_it_waits(tmp_path, monkeypatch,
                                                                                               capsys):
    with fake_hub({}, tmp_path / "hf", monkeypatch), silent_endpoint() as url:
        from huggingface_hub import constants

        monkeypatch.setattr(constants, "ENDPOINT", url)
        monkeypatch.setattr(constants, "HF_HUB_ETAG_TIMEOUT", BOUND_S)
        # huggingface_hub's first request of a process otherwise looks up its agent registry (bounded by its own 3 s)
        monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
        monkeypatch.setattr(hub_requests, "WAITING_S", 0.5)
        status, seconds = _fetch(_sweep(tmp_path), within_s=60)
    out = capsys.readouterr().out
    assert status == 1, f"fetch still waiting on a Hub that never answers after {seconds:.0f} s:\n{out}"
    assert f"asking the Hub ({url}) about 3 repositories, each request up to {BOUND_S} s without an answer" in out
    waited = [int(line.rsplit(": ", 1)[1].removesuffix(" s")) for line in out.splitlines()
              if line.startswith(f"waiting for the Hub ({url}) about org/rm, each request up to {BOUND_S} s")]
    # Lines while it waits, and the wait ends at the bound (its connect is at once, its answer never comes).
    assert len(waited) >= 2 and max(waited) <= BOUND_S + 1, out
    assert (f"cannot fetch org/rm (models.rm.path, models.policy.path): the Hub ({url}) cannot be reached: "
            f"ReadTimeout") in out and f"(each request waits up to {BOUND_S} s for an answer: HF_HUB_ETAG_TIMEOUT)" in out
    for repo, user in (("org/tok", "models.rm.tokenizer"), ("org/base", "models.policy.reference")):
        assert f"cannot fetch {repo} ({user}): not asked: the Hub gave no answer about org/rm" in out
    assert "to fetch: 0 of 3 repositories, 0.0 kB (0 cached, 3 cannot be fetched)" in out
    assert "ragjudge fetch: 3 of 3 repositories not fetched (org/rm, org/tok, org/base)" in out


def test_a_hub_that_refuses_connections_is_counted_in_the_summary_and_fails_the_fetch(tmp_path, monkeypatch, capsys):
    with fake_hub({}, tmp_path / "hf", monkeypatch):
        from huggingface_hub import constants

        monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
        status, _ = _fetch(_sweep(tmp_path), within_s=60)
    out = capsys.readouterr().out
    assert status == 1, out
    assert ("cannot fetch org/rm (models.rm.path, models.policy.path): the Hub (http://127.0.0.1:9) cannot be "
            "reached: ConnectError: ") in out
    assert "DryRunError" not in out
    assert "cannot fetch org/base (models.policy.reference): not asked: the Hub gave no answer about org/rm" in out
    assert "to fetch: 0 of 3 repositories, 0.0 kB (0 cached, 3 cannot be fetched)" in out
    assert out.rstrip().splitlines()[-1].startswith(
        "ragjudge fetch: 3 of 3 repositories not fetched (org/rm, org/tok, org/base), the reason for each above")
