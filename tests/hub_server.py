"""A Hugging Face Hub stand-in on loopback: the part of the Hub's HTTP API that huggingface_hub's
snapshot_download, auth_check and repo_info use (read from huggingface_hub 2.4's source), so tests drive the real
client against real HTTP with no network:

    GET  /api/models/{repo}[/revision/{rev}]      repo info: sha (the commit), siblings, gated
    GET  /api/models/{repo}/tree/{rev}            the file listing: path, size, oid
    GET  /api/models/{repo}/auth-check            401 + X-Error-Code: GatedRepo for a gated repo without a token
    HEAD /{repo}/resolve/{rev}/{file}             X-Repo-Commit, X-Linked-Etag/ETag, Content-Length
    GET  /{repo}/resolve/{rev}/{file}             the bytes (Range honoured), after the repo's delay per file

A gated repository answers its files and auth-check with 401 and X-Error-Code: GatedRepo unless the request
carries `Authorization: Bearer <its token>`. A slow repository sends each file's bytes in pieces over its delay
(as a slow link would: the client's 10 s read timeout never fires).

`silent_endpoint` is a port that accepts connections and never answers, for the bounds of a client's waits.

The server runs in a process of its own (`python tests/hub_server.py SPEC.json`): in the test's process, a Ray
driver's busy threads starved its threads of the GIL until huggingface_hub's reads timed out.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

from loopback import JsonHandler

if TYPE_CHECKING:
    import pytest


@dataclass
class HubRepo:
    """One model repository: its files, the token that opens it when gated, seconds each file's GET waits."""

    files: dict[str, bytes]
    token: str | None = None  # gated: only requests with this token get its files
    delay_s: float = 0.0
    branch: str = "main"

    @cached_property
    def etags(self) -> dict[str, str]:
        """Each file's sha256, as the Hub's ETag of an LFS file."""
        return {name: hashlib.sha256(data).hexdigest() for name, data in self.files.items()}

    @cached_property
    def commit(self) -> str:
        """A sha1 over the files' names and contents, once: every request names it (hashing the repr of a
        26 MB file on each took seconds a request)."""
        digest = hashlib.sha1()
        for name in sorted(self.files):
            digest.update(f"{name}\0{self.etags[name]}\n".encode())
        return digest.hexdigest()


@dataclass
class FakeHub:
    repos: dict[str, HubRepo]
    url: str
    log: Path  # a line "repo/file" per GET of a file's bytes, written by the server

    @property
    def downloads(self) -> Counter[str]:
        """"repo/file" -> GETs of its bytes so far."""
        return Counter(self.log.read_text().splitlines()) if self.log.exists() else Counter()


def _handler(repos: dict[str, HubRepo], log: Path) -> type[JsonHandler]:
    logged = threading.Lock()

    class Handler(JsonHandler):
        def _repo(self, repo_id: str, rev: str | None = None) -> HubRepo | None:
            repo = repos.get(repo_id)
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
            self.send_response(206 if start else 200)
            self.send_header("X-Repo-Commit", repo.commit)
            self.send_header("ETag", f'"{repo.etags[name]}"')
            self.send_header("Content-Length", str(len(data) - start))
            self.end_headers()
            if not body:
                return
            with logged, log.open("a") as f:
                f.write(f"{repo_id}/{name}\n")
            rest = data[start:]
            pieces = max(1, math.ceil(repo.delay_s / 0.5))  # a piece every 0.5 s at most
            size = math.ceil(len(rest) / pieces)
            for i in range(pieces):
                time.sleep(repo.delay_s / pieces)
                self.wfile.write(rest[i * size:(i + 1) * size])

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass  # a client that gave up mid-file (a timeout, a test's end) is the client's story


def main(spec_file: str) -> None:
    """Serve the repositories SPEC.json describes ({"log": path, "repos": {id: {"folder", "token", "delay_s",
    "branch"}}}); the first line printed is the port."""
    spec = json.loads(Path(spec_file).read_text())
    repos = {repo_id: HubRepo({str(p.relative_to(r["folder"])): p.read_bytes()
                               for p in sorted(Path(r["folder"]).rglob("*")) if p.is_file()},
                              r["token"], r["delay_s"], r["branch"]) for repo_id, r in spec["repos"].items()}
    server = _Server(("127.0.0.1", 0), _handler(repos, Path(spec["log"])))
    print(server.server_address[1], flush=True)
    server.serve_forever(poll_interval=0.05)


@contextmanager
def fake_hub(repos: dict[str, HubRepo], cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """The stand-in serving `repos` on loopback from a process of its own, with huggingface_hub pointed at it
    (HF_ENDPOINT) and at an empty cache `cache` (HF_HUB_CACHE), online, and no token unless a test sets HF_TOKEN."""
    from huggingface_hub import constants

    served = cache.parent / f"{cache.name}-hub"
    served.mkdir(parents=True, exist_ok=True)
    spec = {"log": str(served / "downloads.log"), "repos": {}}
    for repo_id, repo in repos.items():
        folder = served / "repos" / repo_id
        for name, data in repo.files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        spec["repos"][repo_id] = {"folder": str(folder), "token": repo.token, "delay_s": repo.delay_s,
                                  "branch": repo.branch}
    (served / "spec.json").write_text(json.dumps(spec))
    server = subprocess.Popen([sys.executable, __file__, str(served / "spec.json")], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).parent)
    try:
        hub = FakeHub(repos, f"http://127.0.0.1:{server.stdout.readline().strip()}", Path(spec["log"]))
        cache.mkdir(parents=True, exist_ok=True)
        for key, value in {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(cache),
                           "HF_HUB_DISABLE_PROGRESS_BARS": "1"}.items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        # huggingface_hub reads these once, at import: its constants follow the test's values here.
        monkeypatch.setattr(constants, "ENDPOINT", hub.url)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                            hub.url + "/{repo_id}/resolve/{revision}/{filename}")
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "HF_HUB_DISABLE_PROGRESS_BARS", True)
        yield hub
    finally:
        server.terminate()
        server.wait(timeout=30)


@contextmanager
def silent_endpoint() -> Iterator[str]:
    """The URL of a loopback port that accepts connections (the kernel completes each handshake into its
    backlog) and never answers a byte, as a Hub behind a hung proxy or load balancer would."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


if __name__ == "__main__":
    main(sys.argv[1])
