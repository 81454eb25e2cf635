"""A JSON-answering request handler for the loopback API servers of the HTTP engine tests, and the body of a
chat completion they answer with."""
from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler


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


def chat_completion(model: str, content: str) -> dict:
    """An OpenAI-compatible chat.completion body with one finished choice saying `content`."""
    return {"id": "x", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}}
