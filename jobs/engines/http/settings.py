"""The API engines' own sections of a model file: `api:` (http, openai_batch and anthropic_batch: where the
endpoint is and how it is asked) and `batch:` (the two batch engines: how a submitted batch is waited for).

jobs.config's ModelConfig nests them. This module imports nothing of jobs, so the config reads it without
loading the engine, and a worker loading it loads no driver code (tests/test_layout.py). A key whose name in
the flat view (what a cell's answers are hashed over, jobs.config) differs from its name here says so in its
`flat` metadata: the section already says `api` or `batch`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# jobs.config's RUN marker (how fast or where it runs: stored answers are kept), written out here because this
# module imports nothing of jobs.
RUN = {"changes": "run"}


@dataclass
class ApiSettings:
    """`api:`, a generative judge behind an HTTP API (kind api)."""

    # the names of the environment variables holding the base URL and the key (never their values, which are
    # redacted wherever a run stores or prints text: jobs.store.redaction)
    base_env: str | None = field(default=None, metadata={**RUN, "flat": "api_base_env"})
    key_env: str | None = field(default=None, metadata={**RUN, "flat": "api_key_env"})
    max_concurrency: int = field(default=8, metadata=RUN)  # requests in flight per actor
    # retries of a 408/409/429/5xx answer, a timeout or a broken connection, with exponential backoff
    max_retries: int = field(default=5, metadata=RUN)
    # seconds to wait for a connection or for the reply's next bytes before a try is given up and retried
    timeout_s: float = field(default=120.0, metadata=RUN)
    # request parameters this endpoint names otherwise (our name -> its name) or rejects (-> null); o1-style
    # reasoning models: {max_tokens: max_completion_tokens, temperature: null, top_p: null}. Hashed: what is
    # sent changes the answers.
    params: dict[str, str | None] = field(default_factory=dict, metadata={"flat": "api_params"})


@dataclass
class BatchSettings:
    """`batch:`, engines openai_batch and anthropic_batch: seconds between polls of a submitted batch, and how
    long one run waits for it before the cell fails. The batch goes on at the provider, manifest.json keeps its
    id and a rerun polls it (the providers' 24 h window, and an hour for the results to be written)."""

    poll_s: float = field(default=60.0, metadata={**RUN, "flat": "batch_poll_s"})
    max_wait_s: float = field(default=90000.0, metadata={**RUN, "flat": "batch_max_wait_s"})
