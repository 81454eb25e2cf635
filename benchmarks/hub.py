"""Benchmark data straight from the Hugging Face Hub: a data path hf://datasets/owner/name[@revision][/path]
is read from huggingface_hub's cache (HF_HUB_CACHE), fetched into it first when online.

The URL grammar and the download are huggingface_hub's own (parse_hf_uri, snapshot_download): a revision may
be a branch, a tag, a commit or refs/convert/parquet, a path names a file or a folder of the repository (none:
all of it), and a cached copy is shared with every tool that uses that cache. Offline (HF_HUB_OFFLINE=1) only
the cache is read, and what it lacks is an error that names the dataset and says how to get it.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from huggingface_hub import HfUri

HF = "hf://"
# huggingface_hub is imported where it is used: the config and the CLI import this module on every command.


class HubDataMissing(FileNotFoundError):
    """An hf:// data path whose files can be neither found in the cache nor fetched; the message says why."""


def is_hub(path: str) -> bool:
    """Whether a data path names a Hugging Face Hub repository (hf://...)."""
    return path.startswith(HF)


def check_url(path: str) -> None:
    """Raise ValueError naming what is wrong with an hf:// data path, without any network access."""
    _parse(path)


def _parse(path: str) -> HfUri:
    from huggingface_hub import parse_hf_uri
    from huggingface_hub.errors import HfUriError

    try:
        uri = parse_hf_uri(path)
    except HfUriError as e:
        raise ValueError(str(e)) from None
    if uri.is_bucket:
        raise ValueError(f"'{path}': a bucket is not a repository; name one, e.g. hf://datasets/owner/name")
    return uri


def local_path(path: str, fetch: bool = True) -> str:
    """The local file or folder a data path reads: `path` itself unless it is an hf:// URL, else what the URL
    names inside the cached snapshot of its repository, fetched into the cache first unless `fetch` is False
    or HF_HUB_OFFLINE=1. Raises HubDataMissing when the cache lacks it and it cannot be fetched."""
    if not is_hub(path):
        return path
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    uri = _parse(path)
    inside = uri.path_in_repo.rstrip("/")
    what = f"{uri.type} {uri.id}" + (f" at revision {uri.revision}" if uri.revision else "")
    no_fetch = ("HF_HUB_OFFLINE=1 forbids fetching it" if constants.is_offline_mode()
                else None if fetch else "this command does not fetch")
    try:
        folder = snapshot_download(uri.id, repo_type=uri.type, revision=uri.revision,
                                   allow_patterns=[inside, f"{inside}/*"] if inside else None,
                                   local_files_only=not fetch)
    except LocalEntryNotFoundError as e:  # not cached, and not to be fetched or the Hub unreachable
        cause = e.__cause__ or e
        raise _missing(path, what, no_fetch or f"fetching it failed ({type(cause).__name__}: "
                                               f"{_first_line(cause)})") from None
    except HfHubHTTPError as e:  # no such repository or revision, or no access to it
        raise HubDataMissing(f"{path}: {_first_line(e)}") from None
    local = os.path.join(folder, *inside.split("/")) if inside else folder
    if os.path.exists(local):
        return local
    if no_fetch:  # the snapshot is cached, but not this part of it
        raise _missing(path, what, no_fetch)
    raise HubDataMissing(f"{path}: no file or folder '{inside}' in the {what}")


def _missing(path: str, what: str, why: str) -> HubDataMissing:
    from huggingface_hub import constants

    return HubDataMissing(f"{path}: the {what} is not in the Hugging Face cache ({constants.HF_HUB_CACHE}) "
                          f"and {why}: run once online to cache it, or set HF_HUB_CACHE to a cache that "
                          "holds it")


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else ""


def cached_snapshot(repo_id: str, repo_type: str = "model", revision: str | None = None,
                    allow_patterns: list[str] | None = None) -> str | None:
    """The cached snapshot folder of a repository at `revision` (default: main), or None; never fetches. Where
    huggingface_hub kept the repository's file listing, the folder must hold every file of it that
    `allow_patterns` matches (all of them when None)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return snapshot_download(repo_id, repo_type=repo_type, revision=revision, local_files_only=True,
                                 allow_patterns=allow_patterns)
    except (LocalEntryNotFoundError, ValueError):  # not cached, or not a repository id at all
        return None
