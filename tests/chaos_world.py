"""What the chaos harness (tests/chaos.py) runs a sweep in: an S3 server (moto, on 127.0.0.1) behind a gate that
can be closed, a scripted API judge, a multi-node Ray cluster on this machine, and the sweep itself: 3 models x
3 benchmarks, small enough for 2 cores.

The gate is a TCP proxy in front of moto: closing it refuses new connections and resets the open ones, as a
crashed or unreachable store does, while moto keeps its objects (stopping moto itself would lose its in-memory
buckets). The driver and Ray's workers reach S3 only through the gate; the harness reads the store directly.
"""
from __future__ import annotations

import io
import json
import os
import select
import socket
import struct
import sys
import threading
import time
from collections import Counter
from contextlib import suppress
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [p for p in (str(ROOT), str(ROOT / "tests")) if p not in sys.path]

from loopback import ScriptedApi

from scripts import multinode

BUCKET = "chaos"
RUN = "chaos"
KEY_ID, SECRET = "RAGJUDGEKEYIDCHAOSTEST", "testing-secret-ragjudge-chaos"
OBJECT_STORE = multinode.OBJECT_STORE
# The head runs nothing of the sweep; two workers, each able to hold every engine of the sweep (1 CPU each)
# and the tasks that feed them alone. With workers of 2 CPUs, a node removed left the two engines restarted on
# the other holding both its CPUs, and their cells' Ray Data tasks (0.25 CPU) could never be placed: the sweep
# hung ("Cluster resources are not enough to run any task", seed 2 of the quick sweep).
WORKER_CPUS = 3
LAYOUT = (0, WORKER_CPUS, WORKER_CPUS)
API_ENV = {"RAGJUDGE_CHAOS_API_BASE": "", "RAGJUDGE_CHAOS_API_KEY": "sk-chaos-0123456789"}
API_DELAY_S = 0.05  # per request: the API cells last a few seconds, long enough for faults to land in them
FLUSH_EVERY = 8  # answers per stored part: several parts per cell
RETRY_S = 60.0  # storage.retry_s: every gate outage of the schedule (at most 20 s) is shorter
LEASE_TIMEOUT_S = 60.0  # past the longest outage (20 s), a heartbeat's period and the retries' backoff
GRACE_S = 20.0
MAX_RETRIES = 6  # the API judge's: a burst (at most BURST_MAX requests) is shorter, so it is retried, not failed
BURST_MAX = 4

# The models: vLLM's tiny classifier (the EngineCore fault needs a vLLM engine), the same weights on the
# transformers engine (starts in seconds), and an API judge against the scripted server. The quick sweep (the
# test's: a vLLM engine takes about 2 minutes to start on 2 cores, and every driver fault starts it again) has a
# second transformers classifier (another batch size: an engine of its own) in the vLLM one's place.
TINY_TF = ('{name: NAME, path: "builtin:tiny-random-classifier", kind: discriminative, engine: transformers, '
           "batch_size: BATCH}")
API_JUDGE = ("{name: api_judge, path: scripted, kind: api, engine: http, api: {base_env: RAGJUDGE_CHAOS_API_BASE, "
             "key_env: RAGJUDGE_CHAOS_API_KEY, max_concurrency: 2, "
             f"max_retries: {MAX_RETRIES}, timeout_s: 10}}, max_new_tokens: 4, batch_size: 4, num_cpus: 0.25}}")
SWEEPS = {
    "full": {"tiny_classifier": "tiny_classifier", "tiny_tf": TINY_TF.replace("NAME", "tiny_tf").replace("BATCH", "4"),
             "api_judge": API_JUDGE},
    "quick": {"tiny_tf2": TINY_TF.replace("NAME", "tiny_tf2").replace("BATCH", "2"),
              "tiny_tf": TINY_TF.replace("NAME", "tiny_tf").replace("BATCH", "4"), "api_judge": API_JUDGE},
}
MODELS = SWEEPS["full"]
MODEL_NAMES = tuple(MODELS)


def use(sweep: str) -> None:
    """Which sweep this process runs: "full" or "quick"."""
    global MODELS, MODEL_NAMES
    MODELS = SWEEPS[sweep]
    MODEL_NAMES = tuple(MODELS)


BENCHMARKS = ("rr_appendix", "rr_synthetic", "rr_short")


def write_sweep(folder: Path) -> Path:
    """The sweep: RAG-RewardBench on three data sets (the paper's Appendix D pairs; 2 synthetic pairs of each
    Table 4 subset at a quarter of its lengths; 1 of each at a tenth), each model on each: 9 cells, every one
    answered (a discriminative model has a protocol only on RAG-RewardBench)."""
    from benchmarks.mtrag.common import write_jsonl
    from benchmarks.rag_rewardbench import synthetic

    folder = folder.resolve()  # the sweep names its data by these paths: relative, they would be read from conf/
    folder.mkdir(parents=True, exist_ok=True)
    synthetic_path, short_path = folder / "synthetic.jsonl", folder / "short.jsonl"
    write_jsonl(str(synthetic_path), list(synthetic.generate(scale=0.25, max_pairs=2)))
    write_jsonl(str(short_path), list(synthetic.generate(scale=0.1, max_pairs=1)))
    data = {"rr_appendix": ROOT / "data" / "rag_rewardbench_appendix_d.jsonl", "rr_synthetic": synthetic_path,
            "rr_short": short_path}
    lines = ["name: chaos", "benchmarks:"]
    lines += [f'  - {{name: {name}, module: rag_rewardbench, data: ["{data[name]}"], bootstrap_resamples: 200}}'
              for name in BENCHMARKS]
    lines += ["models:", *(f"  - {m}" for m in MODELS.values())]
    lines.append(f"storage: {{run: {RUN}, flush_every: {FLUSH_EVERY}, answer_cache: false, retry_s: {RETRY_S:g}, "
                 f"lease_timeout_s: {LEASE_TIMEOUT_S:g}, grace_s: {GRACE_S:g}}}")
    path = folder / "conf" / "sweeps" / "chaos.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gate:
    """A TCP proxy on 127.0.0.1 in front of `target_port`: `close()` refuses new connections and resets the
    open ones; `open()` listens again on the same port."""

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.port = _free_port()
        self.lock = threading.Lock()
        self.conns: set[socket.socket] = set()
        self.listener: socket.socket | None = None
        self.timer: threading.Timer | None = None
        self.outages: list[tuple[float, float]] = []  # (closed at, opened at), time.time()
        self.open()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def is_open(self) -> bool:
        return self.listener is not None

    def open(self) -> None:
        with self.lock:
            if self.listener is not None:
                return
            listener = socket.socket()
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", self.port))
            listener.listen(128)
            self.listener = listener
            if self.outages and self.outages[-1][1] == 0.0:
                self.outages[-1] = (self.outages[-1][0], time.time())
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def close(self) -> None:
        with self.lock:
            listener, self.listener = self.listener, None
            conns, self.conns = list(self.conns), set()
            if listener is not None:
                self.outages.append((time.time(), 0.0))
        if listener is not None:
            with suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes accept()
            listener.close()
        for conn in conns:
            with suppress(OSError):
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.shutdown(socket.SHUT_RDWR)

    def down_for(self, seconds: float) -> None:
        """Closed now, open again after `seconds` (a timer; `stop` cancels it)."""
        self.close()
        self.timer = threading.Timer(seconds, self.open)
        self.timer.daemon = True
        self.timer.start()

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                if self.listener is not listener:  # closed meanwhile
                    client.close()
                    upstream.close()
                    continue
                self.conns.update((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                readable, _, _ = select.select([a, b], [], [], 1.0)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (b if sock is a else a).sendall(data)
        except (OSError, ValueError):
            return
        finally:
            with self.lock:
                self.conns.difference_update((a, b))
            for sock in (a, b):
                with suppress(OSError):
                    sock.close()


class Store:
    """moto's S3 server on 127.0.0.1 with the harness's bucket, the gate in front of it, and a direct client."""

    def __init__(self) -> None:
        import boto3
        from moto.server import ThreadedMotoServer

        self.port = _free_port()
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port)
        self.server.start()
        quiet_moto()
        self.direct = f"http://127.0.0.1:{self.port}"
        self.s3 = boto3.client("s3", endpoint_url=self.direct, aws_access_key_id=KEY_ID,
                               aws_secret_access_key=SECRET, region_name="us-east-1")
        self.s3.create_bucket(Bucket=BUCKET)
        self.gate = Gate(self.port)

    def keys(self, prefix: str) -> list[str]:
        out: list[str] = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
            out += [item["Key"] for item in page.get("Contents", [])]
        return out

    def get(self, key: str) -> bytes:
        return self.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()

    def json(self, key: str) -> Any:
        try:
            return json.loads(self.get(key))
        except self.s3.exceptions.NoSuchKey:
            return None

    def put(self, key: str, data: bytes) -> None:
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=data)

    def close(self) -> None:
        self.gate.stop()
        self.server.stop()


def aws_environment(endpoint: str) -> dict[str, str]:
    """What the driver and Ray's workers need to reach the store through `endpoint` (the gate)."""
    return {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": endpoint}


def set_environment(endpoint: str, api_base: str) -> None:
    """This process's environment, inherited by the cluster's processes and the drivers: before the cluster."""
    for name in ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL_S3", "AWS_REGION",
                 "RAY_ADDRESS"):
        os.environ.pop(name, None)
    os.environ.update(aws_environment(endpoint))
    os.environ.update({**API_ENV, "RAGJUDGE_CHAOS_API_BASE": api_base})


def start_api() -> ScriptedApi:
    api = ScriptedApi({}, delay_s=API_DELAY_S)
    return api.__enter__()


def start_cluster() -> Any:
    """The chaos cluster: LAYOUT's head and workers, as scripts/multinode.py starts its own."""
    return multinode.start_cluster(list(LAYOUT))


def quiet_moto() -> None:
    """No access log line per S3 request on the harness's output."""
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)


def decodes(data: bytes) -> str | None:
    """None if `data` is a Parquet file pyarrow reads whole, else why not (one line)."""
    import pyarrow.parquet as pq

    try:
        pq.read_table(io.BytesIO(data))
    except Exception as e:  # noqa: BLE001 - any failure to decode is the answer
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
    return None


def request_ids(data: bytes) -> list[str]:
    import pyarrow.parquet as pq

    return pq.read_table(io.BytesIO(data), columns=["request_id"]).column("request_id").to_pylist()


def rows_in(data: bytes) -> int:
    import pyarrow.parquet as pq

    return pq.read_metadata(io.BytesIO(data)).num_rows


def count_steps(api: ScriptedApi) -> Counter:
    with api.lock:
        return Counter(api.steps)
