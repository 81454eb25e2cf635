"""BatchServer: a loopback server on 127.0.0.1 that speaks OpenAI's Files and Batches API and Anthropic's Message
Batches API, for the batch engine tests (jobs.engines.openai_batch.engine, jobs.engines.anthropic_batch.engine).

Each poll moves a batch one state on, through the provider's states: OpenAI validating -> in_progress ->
finalizing -> completed, or validating -> failed, in_progress -> expired, in_progress -> cancelling ->
cancelled; Anthropic in_progress -> ended, or in_progress -> canceling -> ended. `end` picks the ending:
completed, failed, expired or cancelled. While `hold` is not set a batch stays in_progress (a provider still at
work). Every request is answered as `answer_to` its custom_id says (a verdict and a prompt token count of its
own, so an answer mapped to the wrong request shows), but those whose last message contains `errored` (an item
the provider failed: HTTP 500 / api_error) and, in an expired or cancelled batch, those containing `late` (not
run before the end); the result line of those containing `unreadable` is not JSON. Results come in a shuffled
order, seeded by the batch id, as a provider's come in no promised order. The server counts what it was sent
(`uploads`, `creates`, `polls` per batch id) and keeps each batch's requests, states served, and every header
value it saw (`header_values`).
"""
from __future__ import annotations

import email.parser
import hashlib
import itertools
import json
import random
import threading
from collections import Counter
from http.server import ThreadingHTTPServer
from typing import Self

from loopback import JsonHandler, chat_completion, serve

OPENAI_PATH = {"completed": ["validating", "in_progress", "finalizing", "completed"],
               "failed": ["validating", "failed"],
               "expired": ["validating", "in_progress", "expired"],
               "cancelled": ["validating", "in_progress", "cancelling", "cancelled"]}
ANTHROPIC_PATH = {"completed": ["in_progress", "ended"], "expired": ["in_progress", "ended"],
                  "cancelled": ["in_progress", "canceling", "ended"]}


def answer_to(custom_id: str) -> tuple[str, int]:
    """The verdict and prompt token count the server answers request `custom_id` with: from its digest, so
    they differ between requests and a test can compute them."""
    digest = hashlib.sha256(custom_id.encode()).digest()
    return f"Choose {1 + digest[0] % 2}", 10 + int.from_bytes(digest[1:3], "big") % 990


def shuffled(lines: list, batch_id: str) -> list:
    """The lines in an order of their own, the same for each fetch of the batch's results."""
    lines = list(lines)
    random.Random(batch_id).shuffle(lines)
    return lines


class BatchServer(ThreadingHTTPServer):
    def __init__(self, end: str = "completed", errored: str = "\x00", late: str = "\x00",
                 unreadable: str = "\x00", hold: threading.Event | None = None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.end, self.errored, self.late, self.unreadable, self.hold = end, errored, late, unreadable, hold
        self.files: dict[str, str] = {}
        self.batches: dict[str, dict] = {}  # id -> {provider, requests, step, states}
        self.uploads, self.creates, self.polls = 0, 0, Counter()
        self.header_values: set[str] = set()
        self.lock = threading.Lock()
        self._ids = itertools.count(1)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"

    def __enter__(self) -> Self:
        serve(self)
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()

    def outcome(self, text: str, state: str) -> str:
        """ok | errored | late | unreadable for a request whose last message is `text`, in a batch that ended
        `state`."""
        if self.unreadable in text:
            return "unreadable"
        if self.errored in text:
            return "errored"
        return "late" if self.late in text and self.end in ("expired", "cancelled") else "ok"

    def advance(self, batch_id: str) -> str:
        """The batch's state at this poll: one step on its path, none while `hold` is not set."""
        with self.lock:
            batch = self.batches[batch_id]
            self.polls[batch_id] += 1
            path = (OPENAI_PATH if batch["provider"] == "openai" else ANTHROPIC_PATH)[self.end]
            held = self.hold is not None and not self.hold.is_set() and path[batch["step"]] == "in_progress"
            if not held and batch["step"] + 1 < len(path):
                batch["step"] += 1
            batch["states"].append(path[batch["step"]])
            return path[batch["step"]]


class _Handler(JsonHandler):
    server: BatchServer

    def _body(self) -> bytes:
        self.server.header_values.update(self.headers.values())
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_POST(self) -> None:  # http.server's method name
        body, server = self._body(), self.server
        if self.path == "/v1/files":
            form = email.parser.BytesParser().parsebytes(
                f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + body)
            content = next(p.get_payload(decode=True) for p in form.get_payload() if p.get_filename())
            file_id = server.new_id("file")
            server.files[file_id] = content.decode()
            server.uploads += 1
            self._reply(200, {"id": file_id, "object": "file", "bytes": len(content), "created_at": 0,
                              "filename": "requests.jsonl", "purpose": "batch"})
        elif self.path == "/v1/batches":
            create = json.loads(body)
            lines = [json.loads(line) for line in server.files[create["input_file_id"]].splitlines()]
            self._created("openai", "batch", {line["custom_id"]: line["body"] for line in lines},
                          lambda batch_id: self._openai_batch(batch_id, "validating"))
        elif self.path == "/v1/messages/batches":
            requests = json.loads(body)["requests"]
            self._created("anthropic", "msgbatch", {r["custom_id"]: r["params"] for r in requests},
                          lambda batch_id: self._anthropic_batch(batch_id, "in_progress"))
        else:
            self._reply(404, {"error": {"message": f"no route {self.path}"}})

    def _created(self, provider: str, prefix: str, requests: dict, reply) -> None:
        server = self.server
        with server.lock:
            batch_id = server.new_id(prefix)
            server.batches[batch_id] = {"provider": provider, "requests": requests, "step": 0, "states": []}
            server.creates += 1
        self._reply(200, reply(batch_id))

    def do_GET(self) -> None:  # http.server's method name
        self._body()
        parts = self.path.strip("/").split("/")
        batch_id = (parts[2] if parts[:2] == ["v1", "batches"]
                    else parts[3] if parts[:3] == ["v1", "messages", "batches"] else None)
        if batch_id is not None and batch_id not in self.server.batches:  # e.g. deleted after its retention
            self._reply(404, {"error": {"type": "not_found_error", "message": f"no batch {batch_id}"}})
        elif parts[:2] == ["v1", "batches"]:
            self._reply(200, self._openai_batch(parts[2], self.server.advance(parts[2])))
        elif parts[:2] == ["v1", "files"] and parts[-1] == "content":
            self._raw(self.server.files[parts[2]])
        elif parts[:3] == ["v1", "messages", "batches"] and parts[-1] == "results":
            self._raw(self._anthropic_results(parts[3]))
        elif parts[:3] == ["v1", "messages", "batches"]:
            self._reply(200, self._anthropic_batch(parts[3], self.server.advance(parts[3])))
        else:
            self._reply(404, {"error": {"message": f"no route {self.path}"}})

    def _raw(self, text: str) -> None:
        data = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _openai_batch(self, batch_id: str, state: str) -> dict:
        out = err = None
        if state in ("completed", "expired", "cancelled"):
            out, err = self._openai_files(batch_id, state)
        errors = ({"object": "list", "data": [{"code": "invalid_request", "line": 1,
                                                "message": "scripted: the file did not validate"}]}
                  if state == "failed" else None)
        return {"id": batch_id, "object": "batch", "endpoint": "/v1/chat/completions", "errors": errors,
                "input_file_id": "file_1", "completion_window": "24h", "status": state, "created_at": 0,
                "output_file_id": out, "error_file_id": err}

    def _openai_files(self, batch_id: str, state: str) -> tuple[str | None, str | None]:
        """The output and error files of the ended batch (written once)."""
        server, batch = self.server, self.server.batches[batch_id]
        with server.lock:
            if "files" not in batch:
                output, errors = [], []
                for custom_id, body in batch["requests"].items():
                    outcome = server.outcome(body["messages"][-1]["content"], state)
                    if outcome == "unreadable":
                        output.append("<html>upstream error</html>")
                    elif outcome == "ok":
                        text, tokens = answer_to(custom_id)
                        answer = {**chat_completion(body["model"], text), "usage": {
                            "prompt_tokens": tokens, "completion_tokens": 2, "total_tokens": tokens + 2}}
                        output.append({"id": f"r_{custom_id}", "custom_id": custom_id, "error": None,
                                       "response": {"status_code": 200, "body": answer}})
                    elif outcome == "errored":
                        errors.append({"id": f"r_{custom_id}", "custom_id": custom_id, "error": None, "response": {
                            "status_code": 500, "body": {"error": {"message": "scripted 500"}}}})
                    else:
                        code = "batch_expired" if state == "expired" else "batch_cancelled"
                        errors.append({"id": f"r_{custom_id}", "custom_id": custom_id, "response": None,
                                       "error": {"code": code, "message": "not run before the batch ended"}})
                ids = []
                for lines in (shuffled(output, batch_id), shuffled(errors, batch_id)):
                    ids.append(server.new_id("file") if lines else None)
                    if lines:
                        server.files[ids[-1]] = "\n".join(
                            line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
                batch["files"] = tuple(ids)
            return batch["files"]

    def _anthropic_batch(self, batch_id: str, state: str) -> dict:
        ended = state == "ended"
        return {"id": batch_id, "type": "message_batch", "processing_status": state,
                "results_url": f"{self.server.base_url}/messages/batches/{batch_id}/results" if ended else None,
                "request_counts": {"processing": 0 if ended else len(self.server.batches[batch_id]["requests"])}}

    def _anthropic_results(self, batch_id: str) -> str:
        server = self.server
        lines = []
        for custom_id, params in server.batches[batch_id]["requests"].items():
            outcome = server.outcome(params["messages"][-1]["content"], server.end)
            if outcome == "unreadable":
                lines.append("<html>upstream error</html>")
                continue
            if outcome == "ok":
                text, tokens = answer_to(custom_id)
                result = {"type": "succeeded", "message": {
                    "id": "msg", "type": "message", "role": "assistant", "model": params["model"],
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                    "usage": {"input_tokens": tokens, "output_tokens": 2}}}
            elif outcome == "errored":
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "api_error", "message": "scripted internal error"}}}
            else:
                result = {"type": "expired" if server.end == "expired" else "canceled"}
            lines.append(json.dumps({"custom_id": custom_id, "result": result}))
        return "\n".join(shuffled(lines, batch_id)) + "\n"
