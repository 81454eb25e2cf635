"""A JSON-answering request handler for the loopback API servers of the HTTP engine tests, the body of a chat
completion they answer with, and ScriptedApi: a server that fails as a test's script says."""
from __future__ import annotations

import json
import select
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

# How often a loopback server's serve_forever looks for shutdown(): socketserver's default 0.5 s made every test
# that stops a server wait up to half a second more in its teardown.
POLL_S = 0.05


def serve(server) -> None:
    """`server` answering on a daemon thread until its shutdown()."""
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True).start()


class JsonHandler(BaseHTTPRequestHandler):
    """Replies with a JSON body; quiet (no access log on the test's output)."""

    def _reply(self, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], release: threading.Event) -> Iterator[str]:
    """`handler` on 127.0.0.1 for the block: its /v1 base URL. `release` is set on the way out, so requests the
    handler holds end before the server shuts down."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    serve(server)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        release.set()
        server.shutdown()


def chat_completion(model: str, content: str, prompt_tokens: int = 7, completion_tokens: int = 2) -> dict:
    """An OpenAI-compatible chat.completion body with one finished choice saying `content`, and its usage."""
    return {"id": "x", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


class ScriptedApi(ThreadingHTTPServer):
    """A chat-completions server on 127.0.0.1 that fails as scripted, to test what the HTTP judge does with
    each fault of a real network and endpoint.

    `script` maps a text to the steps answering the requests whose last message contains it, one step per
    request in turn, the last one repeated (["reset", "ok"]: a reset, then answers); other requests are
    answered. Steps are the names in STEPS. `seen` counts the requests per script key ("" for the others).
    `burst(step, n)` answers the next n requests with `step` whatever they ask, switched on while a run goes on
    (a rate limit, an outage); `steps` counts the requests answered per step; `delay_s` holds each request.
    A good reply says `answer`; each reply with a usage (a good one, and a 200 with no choices) counts its prompt
    as a token per 4 characters of the request's messages and `completion_tokens` for its answer, and `tokens`
    adds up the usage sent, as a provider bills it.
    """

    # socketserver's listen backlog is 5: a judge's 8 connections at once had SYNs dropped and retried after a
    # second, a try the client counts and the server never sees (a provider's backlog is far longer).
    request_queue_size = 64

    def __init__(self, script: dict[str, list[str]], hang_s: float = 60.0, delay_s: float = 0.0,
                 answer: str = "Choose 2", completion_tokens: int = 2):
        super().__init__(("127.0.0.1", 0), _Faulty)
        self.script, self.hang_s, self.delay_s = script, hang_s, delay_s
        self.answer, self.completion_tokens = answer, completion_tokens
        self.tokens: Counter[str] = Counter()  # prompt_tokens, completion_tokens: the usage of the replies sent
        self.seen: Counter[str] = Counter()
        self.bursts: list[str] = []  # steps answering the next requests, whatever they ask (burst())
        self.steps: Counter[str] = Counter()  # requests answered per step
        self.given_up = 0  # hanging requests the client closed before the server gave up on them
        self.lock = threading.Lock()
        self.released = threading.Event()  # ends the hanging steps when the server stops

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def burst(self, step: str, n: int) -> None:
        """Answer the next `n` requests, whichever they are, with `step` (e.g. "429", "500"): a rate limit or an
        outage of the endpoint while a run goes on, switched on at run time."""
        with self.lock:
            self.bursts.extend([step] * n)

    def next_step(self, prompt: str) -> str:
        key = next((key for key in self.script if key in prompt), "")
        with self.lock:
            n = self.seen[key]
            self.seen[key] += 1
            steps = self.script.get(key, ["ok"])
            step = self.bursts.pop(0) if self.bursts else steps[min(n, len(steps) - 1)]
            self.steps[step] += 1
        return step

    def usage(self, body: dict) -> dict[str, int]:
        """The usage of a reply to `body`, added to `tokens`."""
        usage = {"prompt_tokens": len(json.dumps(body["messages"])) // 4, "completion_tokens": self.completion_tokens}
        with self.lock:
            self.tokens.update(usage)
        return usage

    def __enter__(self) -> Self:
        serve(self)
        return self

    def __exit__(self, *exc) -> None:
        self.released.set()
        self.shutdown()
        self.server_close()


class _Faulty(JsonHandler):
    server: ScriptedApi

    def do_POST(self) -> None:  # http.server's method name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.server.delay_s:
            time.sleep(self.server.delay_s)
        STEPS[self.server.next_step(body["messages"][-1]["content"])](self, body)

    def ok(self, body: dict) -> None:
        self._reply(200, chat_completion(body["model"], self.server.answer, **self.server.usage(body)))

    def no_choices(self, body: dict) -> None:
        """A 200 chat.completion with no choices, its usage counted (a provider's glitch, billed all the same)."""
        usage = self.server.usage(body)
        self._reply(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                          "choices": [], "usage": {**usage, "total_tokens": sum(usage.values())}})

    def hang(self, body: dict) -> None:
        """No reply until the client closes the connection (counted in `given_up`), `hang_s` passes or the
        server stops."""
        deadline = time.monotonic() + self.server.hang_s
        while not self.server.released.is_set() and time.monotonic() < deadline:
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable and not self.connection.recv(1, socket.MSG_PEEK):  # end of stream: the client left
                with self.server.lock:
                    self.server.given_up += 1
                break
        self.close_connection = True

    def reset(self, body: dict) -> None:
        """Close with SO_LINGER 0: the client reads a TCP RST (ECONNRESET), not an orderly end."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.rfile.close()  # the last reference besides the socket's own: close() below is the real one
        self.connection.close()
        self.close_connection = True

    def close(self, body: dict) -> None:
        """An orderly close (FIN) without a byte of reply: a proxy or server dropping the request."""
        self.close_connection = True

    def truncated(self, body: dict) -> None:
        """Headers promising the whole body, half of it, then the connection closed."""
        data = json.dumps(chat_completion(body["model"], "Choose 2")).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[:len(data) // 2])
        self.close_connection = True

    def html(self, body: dict) -> None:
        """A 200 HTML error page, as a gateway or captive portal sends."""
        self._raw(200, "text/html", b"<html><body><h1>502 Bad Gateway</h1></body></html>")

    def json_garbage(self, body: dict) -> None:
        """A 200 that says it is JSON and is not."""
        self._raw(200, "application/json", b"<html><body>upstream error</body></html>")

    def echo_headers(self, body: dict) -> None:
        """A 400 whose message quotes the request's headers, credentials included, as a debugging proxy or a
        careless endpoint does: what the judge stores of it must hold no secret."""
        self._reply(400, {"error": {"message": f"bad request; headers: {json.dumps(dict(self.headers))}"}})

    def _raw(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _status(code: int, retry_after_s: int | None = None) -> Callable[[_Faulty, dict], None]:
    """An error reply of HTTP `code`, with a Retry-After header where one is given."""
    headers = None if retry_after_s is None else {"Retry-After": str(retry_after_s)}
    return lambda handler, body: handler._reply(code, {"error": {"message": f"scripted {code}"}}, headers)


STEPS: dict[str, Callable[[_Faulty, dict], None]] = {
    "ok": _Faulty.ok, "hang": _Faulty.hang, "reset": _Faulty.reset, "close": _Faulty.close,
    "truncated": _Faulty.truncated, "html": _Faulty.html, "json garbage": _Faulty.json_garbage,
    "no choices": _Faulty.no_choices,
    "echo headers": _Faulty.echo_headers,
    "400": _status(400), "500": _status(500), "503": _status(503), "429": _status(429, retry_after_s=1),
    "429 for an hour": _status(429, retry_after_s=3600)}  # a spent daily quota
