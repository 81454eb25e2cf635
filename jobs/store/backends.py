"""Storage backends: the few file operations a run root needs, one class per kind of store.

RunRoot (jobs.store.run_root) keeps what every store shares (the layout, retries, redaction, the write fence) and
hands each file operation to the backend its URI's scheme names here, so no other module branches on the kind of
store. A backend sees paths on its own `filesystem` (pyarrow's, which Ray Data and pyarrow readers use too):
an absolute local path, or bucket/key on S3. Adding a store (gs://, say) is one subclass registered under its
scheme with `@register("gs")`; the pyarrow defaults below serve any filesystem, and a subclass overrides what
its store does better (one GET instead of a HEAD and ranged GETs, a conditional PUT).
"""
from __future__ import annotations

import contextlib
import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar, TypeVar

import pyarrow.fs as pafs

from benchmarks.object_store import s3_filesystem

_BACKENDS: dict[str, type[Backend]] = {}
B = TypeVar("B", bound="Backend")


def register(*schemes: str) -> Callable[[type[B]], type[B]]:
    """Class decorator: the backend serves run roots whose URI starts with `<scheme>://` ("" for a plain path)."""
    def add(cls: type[B]) -> type[B]:
        for scheme in schemes:
            _BACKENDS[scheme] = cls
        return cls
    return add


def backend_for(uri: str, endpoint_url: str | None = None) -> Backend:
    """The backend of a run root's URI, picked by its scheme: the one place that tells stores apart."""
    scheme, sep, location = uri.partition("://")
    if not sep:
        scheme, location = "", uri
    if scheme not in _BACKENDS:
        known = ", ".join(f"{s}://" for s in sorted(_BACKENDS) if s not in ("", "file"))
        raise ValueError(f"{uri!r}: no storage backend for {scheme}://; the run root must be a local path or "
                         f"a URI starting with one of: {known}")
    return _BACKENDS[scheme](location, endpoint_url)


class Backend(ABC):
    """One store's operations on whole files. A missing file reads as None and deletes quietly; any other
    failure raises, for RunRoot to retry or report."""

    uri_prefix: ClassVar[str] = ""  # put before a path to name it in messages ("s3://")
    filesystem: pafs.FileSystem
    root: str  # the run root's folder on `filesystem`, no trailing slash; runs are folders under it

    @abstractmethod
    def __init__(self, location: str, endpoint_url: str | None = None) -> None:
        """Connect to the store at `location` (the URI after `scheme://`); sets `filesystem` and `root`."""

    @abstractmethod
    def put(self, path: str, data: bytes) -> None:
        """Store `data` at `path` so that readers see the old file or the whole new one, never a torn one."""

    @abstractmethod
    def get(self, path: str) -> bytes | None:
        """The file's bytes, or None if there is none."""

    @abstractmethod
    def create(self, path: str, data: bytes) -> bool:
        """Store `data` at `path` only if there is no file there, atomically; False if there was one."""

    def files(self, folder: str) -> list[str]:
        """The paths of the files directly in `folder`, [] if there is no such folder."""
        infos = self.filesystem.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        return [info.path for info in infos if info.type == pafs.FileType.File]

    def folders(self, folder: str) -> list[str]:
        """The paths of the folders directly in `folder`, [] if there is no such folder."""
        infos = self.filesystem.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        return [info.path for info in infos if info.type == pafs.FileType.Directory]

    def exists(self, path: str) -> bool:
        return self.filesystem.get_file_info(path).type != pafs.FileType.NotFound

    def delete(self, path: str) -> None:
        """Remove a file if it is there."""
        with contextlib.suppress(FileNotFoundError):
            self.filesystem.delete_file(path)

    def delete_folder(self, folder: str) -> None:
        """Remove a folder and everything in it."""
        self.filesystem.delete_dir(folder)

    def move(self, path: str, target: str) -> None:
        """Move a file, making the target's folder if needed."""
        self.filesystem.create_dir(target.rsplit("/", 1)[0], recursive=True)
        self.filesystem.move(path, target)


@register("", "file")
class LocalBackend(Backend):
    """A local (or mounted) folder: atomic writes by rename, create-if-absent by hard link."""

    def __init__(self, location: str, endpoint_url: str | None = None) -> None:
        self.filesystem = pafs.LocalFileSystem()
        # "/" would give "//run" when a run is joined to it; every other absolute path has no trailing slash.
        self.root = os.path.abspath(os.path.expanduser(location or ".")).rstrip("/")

    def _written(self, path: str, data: bytes, finish: Callable[[str, str], None]) -> None:
        """`data` in a hidden temporary file beside `path` (skipped by pyarrow/Ray dataset discovery), handed
        whole to `finish(temporary, path)`; the temporary file never outlives the call."""
        folder, name = path.rsplit("/", 1)
        os.makedirs(folder, exist_ok=True)
        temporary = f"{folder}/.{name}.tmp-{uuid.uuid4().hex}"
        try:
            with open(temporary, "wb") as out:
                out.write(data)
            finish(temporary, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)

    def put(self, path: str, data: bytes) -> None:
        self._written(path, data, os.replace)

    def get(self, path: str) -> bytes | None:
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def create(self, path: str, data: bytes) -> bool:
        """A finished temporary file hard-linked to `path`: the link fails if `path` exists, and the file is
        whole or absent, never half written."""
        try:
            self._written(path, data, os.link)
        except FileExistsError:
            return False
        return True


@register("s3")
class S3Backend(Backend):
    """s3://bucket/prefix on AWS or any S3-compatible endpoint, through s3fs (pyarrow wraps the same client).

    Credentials and region come from the standard AWS environment (or a profile, a role), never from arguments,
    so this object, its filesystem's pickles and anything derived from them carry none.
    """

    uri_prefix = "s3://"

    def __init__(self, location: str, endpoint_url: str | None = None) -> None:
        self.root = location.strip("/")
        if not self.root:
            raise ValueError(f"{'s3://' + location!r}: an S3 run root needs a bucket, e.g. s3://bucket/runs")
        self.s3 = s3_filesystem(endpoint_url)  # no listing cache: resume must see parts another process wrote since
        self.filesystem = pafs.PyFileSystem(pafs.FSSpecHandler(self.s3))

    def put(self, path: str, data: bytes) -> None:
        """One PUT (or a multipart upload, completed only at the end): atomic."""
        self.s3.pipe_file(path, data)

    def get(self, path: str) -> bytes | None:
        """One GET. A file-like read is a HEAD then ranged GETs pinned to the HEAD's ETag, which fail
        (FileExpired) when another writer replaces the object in between, as a lease's heartbeat does every few
        seconds; a single GET returns one whole version. pyarrow's reader of an fsspec filesystem would also
        take any failed HEAD, an outage included, for a missing file."""
        try:
            return self.s3.cat_file(path)
        except FileNotFoundError:
            return None

    def create(self, path: str, data: bytes) -> bool:
        """A conditional PUT (If-None-Match: *), which AWS S3 and moto honour."""
        try:
            self.s3.pipe_file(path, data, mode="create")
        except FileExistsError:
            return False
        return True

    def files(self, folder: str) -> list[str]:
        """One listing: pyarrow's selector over fsspec asks isdir, then exists, and raises NotADirectoryError
        when the first part lands in between."""
        try:
            return [entry["name"] for entry in self.s3.ls(folder, detail=True) if entry["type"] == "file"]
        except FileNotFoundError:
            return []
