"""Benchmark data on object storage (s3://bucket/key, AWS or any S3-compatible endpoint), read as local files
are: one file or every data file under a prefix, opened as a binary stream.

The client is s3fs, configured from the standard AWS environment only (credentials, a profile or a role;
AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for an S3-compatible server; AWS_REGION or AWS_DEFAULT_REGION), so
no path, config or pickle carries a credential. The run root on S3 (jobs.store.backends) uses the same client.
"""
from __future__ import annotations

import os
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    import s3fs

SCHEME = "s3://"


def is_object_path(path: str) -> bool:
    """Whether a data path names object storage rather than a local file."""
    return path.startswith(SCHEME)


def s3_filesystem(endpoint_url: str | None = None) -> s3fs.S3FileSystem:
    """An S3 client from the standard AWS environment; `endpoint_url` (a run root's setting) first. No
    listing cache and no shared instance: a resumed run must see the objects another process wrote since."""
    import s3fs

    endpoint = endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    return s3fs.S3FileSystem(endpoint_url=endpoint or None, client_kwargs={"region_name": region} if region else {},
                             use_listings_cache=False, skip_instance_cache=True)


def object_versions(path: str, suffixes: tuple[str, ...]) -> dict[str, str]:
    """The object itself, or every object under the prefix whose name ends in one of `suffixes` (not hidden),
    sorted, as s3:// URLs, each with what changes when its bytes do, from one listing without reading them: its
    ETag (an MD5 of the bytes, or of the parts of a multipart upload) and size. Raises FileNotFoundError naming
    the path when there is neither."""
    s3 = s3_filesystem()
    key = path[len(SCHEME):].rstrip("/")
    listed = {key: s3.info(key)} if s3.isfile(key) else {
        name: info for name, info in s3.find(key, detail=True).items()
        if name.endswith(suffixes) and not name.rsplit("/", 1)[-1].startswith(".")}
    if not listed:
        raise FileNotFoundError(f"{path}: no such object, nor any {', '.join(suffixes)} objects under it")
    return {SCHEME + name: f"{info.get('ETag', '')}:{info['size']}" for name, info in sorted(listed.items())}


def open_object(path: str) -> IO[bytes]:
    """An object's bytes as a read-only stream."""
    return s3_filesystem().open(path[len(SCHEME):], "rb")
