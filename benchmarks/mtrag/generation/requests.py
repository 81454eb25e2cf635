"""The requests of a task's rounds: generate (Appendix D.2), then the judges on the response (RB_llm per
judge, IDK, RAGAS statements), then the RAGAS verdicts once the statements parsed. Every request is greedy, has its
variant's max_tokens and a `route` ("self" or a judge model)."""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from benchmarks.mtrag.generation.options import (
    GENERATION,
    IDK,
    PLACEHOLDER,
    RB_LLM,
    SELF,
    STATEMENTS,
    VERDICTS,
    Options,
    prompts,
)
from benchmarks.mtrag.generation.passages import selected, setting_passages
from benchmarks.mtrag.generation.scores import parse_statements
from benchmarks.row_types import Answer, Item, Request


def requests(item: Item, answers: Mapping[str, Answer], options: Options) -> list[Request]:
    """Every request the answers so far (request id -> answer) make possible, answered or not; none for a task
    outside the run, or whose passages cannot be had (combine says why)."""
    if item.get("error") or not selected(item, options):
        return []
    try:
        passages = setting_passages(item, options)
    except ValueError:
        return []
    texts = prompts(options)
    judges = options.judges
    out = []
    if options.responses == "generate":
        out.append(request(item, GENERATION, SELF, generation_messages(item, passages, options), options))
    response = response_of(item, answers, options)[0]
    if response is None:
        return out
    for judge in judges.rb_llm:
        out.append(request(item, RB_LLM, judge, user(fill(
            texts[RB_LLM], previous_conversation=conversation(item["turns"][:-1]),
            current_question=item["turns"][-1]["text"].strip(), reference_answer=item["reference"],
            response=response, passages="\n\n".join(p["text"] for p in passages))), options))
    out.append(request(item, IDK, judges.idk, user(fill(texts[IDK], inquiry=conversation(item["turns"]),
                                                        response=response)), options))
    out.append(request(item, STATEMENTS, judges.ragas, user(fill(
        texts[STATEMENTS], question=conversation(item["turns"]), answer=response)), options))
    extracted = answers.get(request_id(item, STATEMENTS, judges.ragas))
    statements = parse_statements(extracted["text"]) if extracted and not extracted.get("error") else None
    if statements:
        out.append(request(item, VERDICTS, judges.ragas, user(fill(
            texts[VERDICTS], context="\n".join(p["text"] for p in passages),
            statements=json.dumps(statements, ensure_ascii=False))), options))
    return out


def request_id(item: Mapping[str, Any], variant: str, route: str = SELF) -> str:
    """<item id>#generation, or <item id>#<judge variant>@<judge>: deterministic, one per judge."""
    return f"{item['item_id']}#{variant}" if variant == GENERATION else f"{item['item_id']}#{variant}@{route}"


def request(item: Item, variant: str, route: str, messages: list[dict[str, str]], options: Options) -> Request:
    return {"request_id": request_id(item, variant, route), "item_id": item["item_id"], "subset": item["subset"],
            "variant": variant, "route": route, "messages": messages,
            "max_tokens": getattr(options.max_tokens, variant)}


def generation_messages(item: Mapping[str, Any], passages: Sequence[Mapping[str, str]],
                        options: Options) -> list[dict[str, str]]:
    """Appendix D.2: the instruction and PASSAGE 1..M, then the conversation's turns as chat messages."""
    texts = prompts(options)
    shown = "\n\n".join(fill(texts["passage"], number=str(i), text=p["text"].strip())
                        for i, p in enumerate(passages, 1))
    head = fill(texts["generation"], passages=shown).strip()
    turns = [{"role": "user" if t["speaker"] == "user" else "assistant", "content": t["text"]} for t in item["turns"]]
    if options.prompt_role == "system":
        return [{"role": "system", "content": head}] + turns
    if turns[0]["role"] == "user":
        return [{"role": "user", "content": f"{head}\n\n{turns[0]['content']}"}] + turns[1:]
    return [{"role": "user", "content": head}] + turns


def conversation(turns: Iterable[Mapping[str, str]]) -> str:
    """Turns as "speaker: text" lines, as the authors' judge script writes the inquiry."""
    return "\n".join(f"{t['speaker']}: {t['text']}" for t in turns)


def fill(template: str, **values: str) -> str:
    """The template with its placeholders filled in one pass; braces that name no value stay as they are."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def user(content: str) -> list[dict[str, str]]:
    """A judge prompt: one user message."""
    return [{"role": "user", "content": content}]


def response_of(item: Item, answers: Mapping[str, Answer],
                options: Options) -> tuple[str | None, str | None, bool]:
    """(response, why there is none, truncated): the generated text, or predictions[0] with responses given."""
    if options.responses == "given":
        text = item.get("prediction")
        if text:
            return text.strip(), None, False
        return None, "responses: given, but the task has no predictions[0].text", False
    answer = answers.get(request_id(item, GENERATION))
    if answer is None:
        return None, "the generation request has no answer", False
    if answer.get("error") or answer.get("text") is None:
        return None, f"generation failed: {answer.get('error') or 'no text'}", bool(answer.get("truncated"))
    return answer["text"].strip(), None, bool(answer.get("truncated"))
