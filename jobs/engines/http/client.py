"""Judges behind an OpenAI-compatible chat API: hosted models (GPT-4o, Claude, Gemini gateways) or `vllm serve`.

The `openai` client does the HTTP work we would otherwise write: it retries 408/409/429/5xx, timeouts (after
the model's `api.timeout_s`) and broken connections (a reset, a close without a reply, a body cut short) with
exponential backoff (honouring Retry-After) up to `api.max_retries`. We add a bound on requests in flight per
actor, turn a 401 into an error that names the model and the key's variable (never its value), and keep any
other failed request as an error on its own row that names the model, what failed and after how many tries. A
200 reply that is no chat completion (not JSON, no choices, content that is not text) is the provider's fault,
as a 5xx is: the client does not retry it, so it is asked again here, at once, within the same `max_retries`.

Each request's HTTP calls are counted where they are sent: the client's HTTP client is openai's own with a
`send` that records what each call met (the openai client retries inside one call and tells nothing of the
tries before its last), so every answer carries its tries and the tokens its replies' usage counted (the
columns `api_<key>` of actors.engine_ledger.RequestUsage), which the http engine adds up for manifest.json.

An API cannot prefill the assistant turn, so a judge's verdict here is always parsed from the text. Endpoints
differ in the parameters they take: o1-style reasoning models want `max_completion_tokens` and reject
`temperature`/`top_p`; the model file says so in `api.params`, never a list of model names here.
"""
from __future__ import annotations

import asyncio
import json
import os
from contextvars import ContextVar
from typing import Any, NamedTuple, TypedDict

import numpy as np

from actors.engine_ledger import USAGE_KEYS, RequestUsage
from actors.sampling import REQUEST_INPUTS, text_sampling
from actors.worker_model import WorkerModel
from benchmarks.boundary_types import ArrowRow, ColumnBatch, Kwargs
from benchmarks.decoding import quoted
from benchmarks.row_types import PromptAnswer, Request


class Secret(str):
    """A credential passed to actors as an argument: its repr never shows the value (Ray logs arguments)."""

    def __repr__(self) -> str:
        return "Secret('***')"


class ApiAuthError(RuntimeError):
    """The endpoint refused the key: every request would fail, so the cell stops with this message."""


class Credentials(TypedDict):
    """Where an API judge is and its key: read from the environment on the driver, handed to its workers."""

    base_url: str
    api_key: Secret


def api_credentials(model: WorkerModel) -> Credentials:
    """Base URL and key from the environment variables a model config names, read on the driver.

    Worker nodes need not have the variables; the values travel as constructor arguments, wrapped in Secret.
    """
    values = {}
    for key in ("api_base_env", "api_key_env"):
        name, place = getattr(model, key), f"api.{key.removeprefix('api_')}"  # as the model file writes it
        if not name:
            raise ValueError(f"model '{model.name}': '{place}' is not set; an http engine needs it")
        if not os.environ.get(name):
            raise ValueError(f"model '{model.name}': environment variable {name} ({place}) is not set")
        values[key] = os.environ[name]
    return {"base_url": values["api_base_env"], "api_key": Secret(values["api_key_env"])}


def request_params(sampling: Kwargs, renames: dict[str, str | None]) -> Kwargs:
    """A request's sampling (actors.sampling.text_sampling) in the endpoint's own terms: each parameter
    `renames` maps is sent under its new name, or left out where it maps to None (the endpoint then samples
    its own way, e.g. an o1 model at its fixed temperature, whatever the benchmark asked)."""
    out = {}
    for key, value in sampling.items():
        name = renames.get(key, key)
        if name is not None:
            out[name] = value
    return out


# An API answers in text only: no prefill to read log-probs from, and the endpoint says nothing of a cut prompt.
TEXT_ONLY = {"truncated": False, "candidate_logprobs": None}


def chat_request(row: Request, model: WorkerModel) -> tuple[list[dict[str, str]], Kwargs]:
    """A request row as a chat API takes it: its messages, and its sampling in the endpoint's terms (the model's
    `api.params`). Shared by the http engine and the batch engines, which send the same body another way."""
    messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in row["messages"]]
    body = request_params(text_sampling(row, model), dict(model.api_params or {}))
    if model.enable_thinking is not None:  # vLLM's and SGLang's servers pass it to the model's chat template
        body["chat_template_kwargs"] = {"enable_thinking": model.enable_thinking}
    return messages, body


# Body keys the openai client has no parameter for: sent through its extra_body.
EXTRA_BODY = ("chat_template_kwargs",)


def refused_key(model: WorkerModel, status: int | None) -> ApiAuthError:
    """The error that stops a cell whose endpoint refused the key: it names the variable, never the value."""
    return ApiAuthError(f"model '{model.name}': the endpoint refused the key in {model.api_key_env} "
                        f"(HTTP {status})")


# What the HTTP calls of the request being asked met, in order: each request is asked in an asyncio task of its
# own (asyncio.gather), whose copy of the context holds its list, so the calls its client sends land in it.
_TRIES: ContextVar[list[str]] = ContextVar("ragjudge_http_tries")
MALFORMED = "malformed reply"  # a try whose 200 was no chat completion
USAGE_COLUMN = "api_{}"  # the answer column of each RequestUsage key


def counting_http_client() -> Any:
    """openai's own HTTP client (its timeouts, connection limits, redirects and proxies) whose every call adds
    what it met ('HTTP 500', 'timeout', 'connection failed') to the asking request's tries."""
    import openai

    class CountingClient(openai.DefaultAsyncHttpxClient):
        async def send(self, request: Any, **kwargs: Any) -> Any:
            tries = _TRIES.get()
            try:
                response = await super().send(request, **kwargs)
            except Exception as exc:
                tries.append(_call_failure(exc))
                raise
            tries.append(f"HTTP {response.status_code}")
            return response

    return CountingClient()


def _call_failure(exc: Exception) -> str:
    """What a call that raised met, as the openai client retries it: httpx's and httpx2's timeouts (connect, read,
    write, pool) all derive from a class of that name; every other error of a call is a broken connection."""
    return "timeout" if any(cls.__name__ == "TimeoutException" for cls in type(exc).__mro__) else "connection failed"


class Answered(NamedTuple):
    """A request's answer and what asking it took."""

    answer: PromptAnswer
    usage: RequestUsage


class HttpJudge:
    """`map_batches` class: a text answer per judge request, `max_concurrency` requests in flight at once, each
    with its RequestUsage in the columns `api_<key>`."""

    def __init__(self, model: WorkerModel, base_url: str, api_key: str):
        from openai import AsyncOpenAI

        self.model = model
        self.client = AsyncOpenAI(base_url=base_url, api_key=str(api_key), http_client=counting_http_client(),
                                  max_retries=int(model.max_retries), timeout=float(model.timeout_s))

    def __call__(self, batch: dict[str, np.ndarray]) -> ColumnBatch:
        rows = [{key: values[i] for key, values in batch.items()} for i in range(len(batch["messages"]))]
        conversations, samplings = zip(*(chat_request(row, self.model) for row in rows))
        answered = asyncio.run(self._answer_all(list(conversations), list(samplings)))
        out = {key: values for key, values in batch.items() if key not in REQUEST_INPUTS}
        traced = ("thinking", "thinking_finished") if self.model.trace_field else ()
        traced += ("thinking_tokens",) if self.model.reasoning is not None else ()
        for key in ("text", "error", "n_tokens", *traced):
            out[key] = [a.answer.get(key) for a in answered]
        for key, value in TEXT_ONLY.items():
            out[key] = [value] * len(answered)
        for key in USAGE_KEYS:
            out[USAGE_COLUMN.format(key)] = [a.usage[key] for a in answered]
        return out

    async def _answer_all(self, conversations: list[list[dict[str, str]]], samplings: list[Kwargs]
                          ) -> list[Answered]:
        limit = asyncio.Semaphore(int(self.model.max_concurrency))
        return await asyncio.gather(*(self._answer(c, s, limit) for c, s in zip(conversations, samplings)))

    async def _answer(self, messages: list[dict[str, str]], sampling: Kwargs, limit: asyncio.Semaphore
                      ) -> Answered:
        """The request asked until it is answered or `max_retries` retries are spent, whatever their causes."""
        async with limit:
            usage = RequestUsage(tries=[], prompt_tokens=0, cached_prompt_tokens=0, generated_tokens=0,
                                 thinking_tokens=0)
            _TRIES.set(usage["tries"])
            while True:
                answer, malformed = await self._ask(messages, sampling, usage)
                if malformed:
                    usage["tries"][-1] = MALFORMED
                if not malformed or len(usage["tries"]) > int(self.model.max_retries):
                    return Answered(answer, usage)

    async def _ask(self, messages: list[dict[str, str]], sampling: Kwargs, usage: RequestUsage
                   ) -> tuple[PromptAnswer, bool]:
        """One call of the client, retrying within what is left of `max_retries`: the answer, and whether it
        failed on a 200 that is no chat completion."""
        import openai

        tried = len(usage["tries"])
        client = self.client.with_options(max_retries=int(self.model.max_retries) - tried) if tried else self.client
        extra = {key: sampling[key] for key in EXTRA_BODY if key in sampling}
        sampling = {key: value for key, value in sampling.items() if key not in extra}
        try:
            response = await client.chat.completions.create(model=self.model.path, messages=messages, **sampling,
                                                            **({"extra_body": extra} if extra else {}))
        except openai.AuthenticationError as exc:
            raise refused_key(self.model, exc.status_code) from None
        # After the client's retries, or a 200 whose body says it is JSON and is not (the client lets
        # json.JSONDecodeError through): this row fails, the others go on.
        except (openai.APIError, json.JSONDecodeError) as exc:
            failure = request_failure(exc, float(self.model.timeout_s), len(usage["tries"]))
            failed: PromptAnswer = {"text": None, "n_tokens": 0, "error": failure.row_error(self.model.name)}
            return failed, isinstance(exc, json.JSONDecodeError)
        add_usage(usage, response)
        text, failure = completion_text(response)
        if failure:
            failure = failure._replace(tries=len(usage["tries"]))
        answer: PromptAnswer = {"text": text, "error": failure and failure.row_error(self.model.name),
                                "n_tokens": _count(getattr(response, "usage", None), "prompt_tokens")}
        if self.model.trace_field and not failure:
            answer.update(completion_thinking(response, self.model.trace_field))
        if self.model.reasoning is not None and not failure:
            answer["thinking_tokens"] = reasoning_tokens(response)
        return answer, failure is not None


def taken_usage(answer: ArrowRow) -> RequestUsage:
    """The RequestUsage an answer row of HttpJudge's carries in its `api_<key>` columns, taken off the row."""
    taken = {key: answer.pop(USAGE_COLUMN.format(key)) for key in USAGE_KEYS}
    return RequestUsage(tries=list(taken["tries"]), prompt_tokens=int(taken["prompt_tokens"]),
                        cached_prompt_tokens=int(taken["cached_prompt_tokens"]),
                        generated_tokens=int(taken["generated_tokens"]),
                        thinking_tokens=int(taken["thinking_tokens"]))


def add_usage(usage: RequestUsage, reply: Any) -> None:
    """Add the tokens a reply's `usage` counts (a provider bills a 200 that is no chat completion too; a body
    that is not JSON counts none)."""
    counted = getattr(reply, "usage", None)
    usage["prompt_tokens"] += _count(counted, "prompt_tokens")
    usage["generated_tokens"] += _count(counted, "completion_tokens")
    usage["cached_prompt_tokens"] += _count(getattr(counted, "prompt_tokens_details", None), "cached_tokens")
    usage["thinking_tokens"] += _count(getattr(counted, "completion_tokens_details", None), "reasoning_tokens")


def _count(usage: Any, name: str) -> int:
    """A token count of a reply's usage, 0 where it has none or it is no count (an endpoint's garbage)."""
    value = getattr(usage, name, None)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class Failure(NamedTuple):
    """Why a row has no answer: what failed, the details in the endpoint's or the network's own words, and
    the requests sent for it (None where no one counted them: a provider batch's item)."""

    what: str
    detail: str = ""
    tries: int | None = None

    def row_error(self, model: str) -> str:
        """'api: <what> (model '<model>', <n> tries): <detail>', the row's error."""
        tries = "" if self.tries is None else f", {self.tries} {'try' if self.tries == 1 else 'tries'}"
        return f"api: {self.what} (model '{model}'{tries})" + (f": {self.detail}" if self.detail else "")


def request_failure(exc: Exception, timeout_s: float, tries: int) -> Failure:
    """The Failure of a request the client gave up on (openai.APIError) or could not parse (JSONDecodeError),
    after `tries` HTTP calls.

    A broken connection is told in the network's own words: 'Connection reset by peer', 'Server disconnected
    without sending a response', 'peer closed connection without sending complete message body (received N
    bytes, expected M)'; the openai client's own message is 'Connection error.' for all of them.
    """
    import openai

    if isinstance(exc, json.JSONDecodeError):
        return Failure("the reply is not JSON", quoted(exc.doc), tries)
    if isinstance(exc, openai.APITimeoutError):  # before APIConnectionError, its base class
        return Failure(f"timeout after {timeout_s:g} s", tries=tries)
    if isinstance(exc, openai.APIConnectionError):
        return Failure("connection failed", _cause_message(exc), tries)
    if isinstance(exc, openai.APIStatusError):
        return Failure(f"HTTP {exc.status_code}", str(exc)[:300], tries)
    return Failure(type(exc).__name__, str(exc)[:300], tries)


def _cause_message(exc: BaseException) -> str:
    """The first non-empty message among the exceptions that caused `exc` (httpx's, or the OSError under it)."""
    cause = exc.__cause__ or exc.__context__
    for _ in range(8):  # the chain is short (openai, httpx, httpcore, anyio, OSError); never loop on a cycle
        if cause is None or str(cause):
            break
        cause = cause.__cause__ or cause.__context__
    return f"{type(cause).__name__}: {cause}" if cause is not None else ""


def reasoning_tokens(response: Any) -> int | None:
    """The tokens a reply says its model spent thinking (`usage.completion_tokens_details.reasoning_tokens`: the
    OpenAI API, vLLM's server with a reasoning parser); None where it says nothing, which is not zero."""
    details = getattr(getattr(response, "usage", None), "completion_tokens_details", None)
    return _count(details, "reasoning_tokens") if getattr(details, "reasoning_tokens", None) is not None else None


def completion_thinking(response: Any, trace_field: str) -> PromptAnswer:
    """The trace a chat completion carries in its message's `trace_field`, and whether it ended: a reply cut at
    its token limit (finish_reason "length") with no content ended inside the trace. Nothing where the reply has
    no such field (the server runs no reasoning parser): the trace is then split from the text by its
    delimiters (jobs.engines.reasoning)."""
    choice = response.choices[0]
    trace = getattr(choice.message, trace_field, None)
    if not isinstance(trace, str):
        return {}
    finished = bool(choice.message.content) or getattr(choice, "finish_reason", None) != "length"
    return {"thinking": trace, "thinking_finished": finished, **({} if finished else {"text": None})}


def completion_text(response: Any) -> tuple[str | None, Failure | None]:
    """(text, None) of a chat completion, or (None, why) for a 200 reply that is none (a body that is not JSON,
    which the client hands over as text; no choices, no message, content that is not text): an endpoint's
    garbage fails its own row, not the batch."""
    if isinstance(response, str):
        return None, Failure("the reply is not JSON", quoted(response))
    choices = getattr(response, "choices", None)
    message = getattr(choices[0], "message", None) if isinstance(choices, list) and choices else None
    if message is None:
        return None, Failure("the reply has no choices[0].message")
    content = getattr(message, "content", None)
    if content is not None and not isinstance(content, str):
        return None, Failure(f"choices[0].message.content is {type(content).__name__}, not text")
    return content or "", None
