"""A Hugging Face Hub stand-in on loopback: the part of the Hub's HTTP API that huggingface_hub's
snapshot_download, auth_check and repo_info use (read from huggingface_hub 2.4's source), so tests drive the real
client against real HTTP with no network:

    GET  /api/models/{repo}[/revision/{rev}]      repo info: sha (the commit), siblings, gated
    GET  /api/models/{repo}/tree/{rev}            the file listing: path, size, oid
    GET  /api/models/{repo}/auth-check            401 + X-Error-Code: GatedRepo for a gated repo without a token
    HEAD /{repo}/resolve/{rev}/{file}             X-Repo-Commit, X-Linked-Etag/ETag, Content-Length
    GET  /{repo}/resolve/{rev}/{file}             the bytes (Range honoured), after the repo's delay per file

A gated repository answers its files and auth-check with 401 and X-Error-Code: GatedRepo unless the request
carries `Authorization: Bearer <its token>`.
"""
from __future__ import annotations

import hashlib
import re
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from loopback import JsonHandler, serve


@dataclass
class HubRepo:
    """One model repository: its files, the token that opens it when gated, seconds each file's GET waits."""

    files: dict[str, bytes]
    token: str | None = None  # gated: only requests with this token get its files
    delay_s: float = 0.0
    branch: str = "main"

    @property
    def commit(self) -> str:
        return hashlib.sha1(repr(sorted(self.files.items())).encode()).hexdigest()


@dataclass
class FakeHub:
    repos: dict[str, HubRepo]
    url: str = ""
    downloads: Counter[str] = field(default_factory=Counter)  # "repo/file" -> GETs of its bytes


def _handler(hub: FakeHub) -> type[JsonHandler]:
    class Handler(JsonHandler):
        def _repo(self, repo_id: str, rev: str | None = None) -> HubRepo | None:
            repo = hub.repos.get(repo_id)
            if repo is None or rev not in (None, repo.branch, repo.commit):
                self._reply(404, {"error": "not found"}, {"X-Error-Code": "RepoNotFound" if repo is None
                                                          else "RevisionNotFound"})
                return None
            return repo

        def _locked(self, repo: HubRepo) -> bool:
            if repo.token and self.headers.get("Authorization") != f"Bearer {repo.token}":
                self._reply(401, {"error": "Access to this model is restricted."}, {"X-Error-Code": "GatedRepo"})
                return True
            return False

        def do_GET(self) -> None:
            self._serve(body=True)

        def do_HEAD(self) -> None:
            self._serve(body=False)

        def _serve(self, body: bool) -> None:
            path = self.path.split("?")[0]
            if m := re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/([^/]+))?", path):
                if repo := self._repo(m[1], m[2]):
                    self._reply(200, {"id": m[1], "sha": repo.commit, "private": False,
                                      "gated": "manual" if repo.token else False,
                                      "siblings": [{"rfilename": f} for f in sorted(repo.files)]})
            elif m := re.fullmatch(r"/api/models/([^/]+/[^/]+)/auth-check", path):
                if (repo := self._repo(m[1])) and not self._locked(repo):
                    self._reply(200, {})
            elif m := re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/([^/]+)", path):
                if repo := self._repo(m[1], m[2]):
                    self._reply_list([{"type": "file", "path": f, "size": len(data),
                                       "oid": hashlib.sha1(data).hexdigest()} for f, data in sorted(repo.files.items())])
            elif m := re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path):
                if (repo := self._repo(m[1], m[2])) and not self._locked(repo):
                    self._file(m[1], repo, m[3], body)
            else:
                self._reply(404, {"error": f"no route {path}"})

        def _reply_list(self, payload: list) -> None:
            import json

            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _file(self, repo_id: str, repo: HubRepo, name: str, body: bool) -> None:
            data = repo.files.get(name)
            if data is None:
                self._reply(404, {"error": "entry not found"}, {"X-Error-Code": "EntryNotFound"})
                return
            start = int(m[1]) if (m := re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))) else 0
            if body:
                hub.downloads[f"{repo_id}/{name}"] += 1
                time.sleep(repo.delay_s)
            self.send_response(206 if start else 200)
            self.send_header("X-Repo-Commit", repo.commit)
            self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.send_header("Content-Length", str(len(data) - start))
            self.end_headers()
            if body:
                self.wfile.write(data[start:])

    return Handler


@contextmanager
def fake_hub(repos: dict[str, HubRepo], cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """The stand-in serving `repos` on loopback, with huggingface_hub pointed at it (HF_ENDPOINT) and at an empty
    cache `cache` (HF_HUB_CACHE), online, and no token unless a test sets HF_TOKEN."""
    from huggingface_hub import constants

    hub = FakeHub(repos)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    serve(server)
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    cache.mkdir(parents=True, exist_ok=True)
    for key, value in {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(cache), "HF_HUB_DISABLE_PROGRESS_BARS": "1"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    # huggingface_hub reads these once, at import: its constants follow the test's values here.
    monkeypatch.setattr(constants, "ENDPOINT", hub.url)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", hub.url + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_PROGRESS_BARS", True)
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
