"""Where a run lives: the run root (a local folder or S3, each a storage backend) and its layout, storage retries,
secret redaction, the driver's lease and manifest.json."""
from jobs.store.backends import Backend, register
from jobs.store.lease import LEASE, Lease, LeaseHeld, LeaseLost, LeaseRecord
from jobs.store.manifest import (
    FAILED_DATA,
    FAILED_ERRORS,
    MANIFEST,
    SCORED,
    CellBatch,
    Manifest,
    implicit_scores,
    predictions_stored,
)
from jobs.store.redaction import redact
from jobs.store.retry import StorageError, StorageFull, StorageUnreachable, UnreadableFile, retrying
from jobs.store.run_root import RunRoot, open_run, partition_value

__all__ = ["FAILED_DATA", "FAILED_ERRORS", "LEASE", "MANIFEST", "SCORED", "Backend", "CellBatch", "Lease", "LeaseHeld",
           "LeaseLost", "LeaseRecord", "Manifest", "RunRoot", "StorageError", "StorageFull", "StorageUnreachable", "UnreadableFile",
           "implicit_scores", "open_run", "partition_value", "predictions_stored", "redact", "register", "retrying"]
