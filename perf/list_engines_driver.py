"""The driver with the engines that take lists (issue 65): a judged cell's driver memory and requests per second
with the stand-in engine and the HTTP engine against a loopback OpenAI-compatible server, 20k to 1M pairs.

    python perf/list_engines_driver.py OUT.json [--engines stand_in,http] [--sizes 20000,100000,1000000]
                                                [--tree DIR ...] [--timeout-s 1800] [--max-rss-mib 8192]
                                                [--data-dir DIR]

Workload: synthetic RAG-RewardBench pairs at 0.05 of Table 4's lengths (perf/framework_ceiling.py's SCALE),
repeated under new ids up to the size; both engines are asked RAG-RewardBench's generative protocol, both
orders, so 2 requests a pair.
- `stand_in`: kind generative, engine stand_in (its instant echo text).
- `http`: kind api, engine http, the model's max_concurrency, min_actors and max_actors at their defaults,
  against a ThreadingHTTPServer this process starts on 127.0.0.1 that answers every POST
  /v1/chat/completions at once with a chat.completion whose content is "Choose 1" or "Choose 2" (by a hash of
  the request body) and usage counts, with TCP_NODELAY on its sockets (see `Judge`). The base URL and key
  reach the model through environment variables, named in the model config the way the checkout under test
  takes them (flat `api_base_env`, or `api:`).

Each (engine, size, tree) runs jobs.sweep.cell.run_cell in a fresh process (perf/framework_ceiling.py's
`cell` path: a local cluster as `ragjudge run` starts one, an EngineHost, a local run root), so its peak is
its own; the data is made once a size, in another process, and shared by every run of that size. `--tree DIR`
(repeatable) runs a checkout's code (its `jobs`, `actors`, `benchmarks` first on the path; the child says
which `jobs` it imported). A child past `--timeout-s`, or whose RSS passes `--max-rss-mib` (sampled from
outside every second), is stopped and recorded as such.

Per run: pairs, requests, the cell's seconds (without Ray's start), requests per second, the driver's peak
RSS (ru_maxrss) and peak private RSS (without the object store's shared pages, sampled every 0.5 s), the
cell's status and message; for http, the POSTs the server answered.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import fields, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil
from framework_ceiling import SCALE, PrivatePeak

ROOT = Path(__file__).resolve().parents[1]
BASE_ENV, KEY_ENV = "RAGJUDGE_PERF_API_BASE", "RAGJUDGE_PERF_API_KEY"
KINDS = {"stand_in": ("generative", "stand_in"), "http": ("api", "http")}


def make_data(path: Path, pairs: int) -> None:
    """`pairs` synthetic pairs: Table 4's at SCALE, repeated under new ids (the code of the tree on PYTHONPATH)."""
    from benchmarks.rag_rewardbench import synthetic

    base = list(synthetic.generate(scale=SCALE))
    partial = path.with_suffix(".partial")
    with partial.open("w") as out:
        for n in range(pairs):
            pair = base[n % len(base)]
            out.write(json.dumps({**pair, "id": f"{pair['id']}-c{n // len(base)}"}) + "\n")
    partial.rename(path)  # a make cut short never passes for a whole file on the next invocation


class Judge(BaseHTTPRequestHandler):
    """POST /v1/chat/completions -> a chat.completion at once; keep-alive, so the client's pool reuses sockets.

    TCP_NODELAY on each accepted socket: the handler writes a response's headers and its body in two sends, and
    with Nagle's algorithm on a kept-alive socket the body waited for the client's delayed ACK of the headers,
    about 40 ms a request (45 ms a request on one connection, 0.14 ms with it off; 188 req/s in a judged
    cell at 8 in flight, the client's actor at 40% of a core and this server at 9%)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    answered = 0
    lock = threading.Lock()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        choice = 1 + hashlib.blake2b(body, digest_size=1).digest()[0] % 2
        request = json.loads(body)
        prompt = sum(len(str(m.get("content", ""))) for m in request.get("messages", [])) // 4
        self._send(200, {"id": "chatcmpl-loopback", "object": "chat.completion", "created": int(time.time()),
                         "model": request.get("model", "loopback"),
                         "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                      "message": {"role": "assistant", "content": f"Choose {choice}"}}],
                         "usage": {"prompt_tokens": prompt, "completion_tokens": 3, "total_tokens": prompt + 3}})
        with Judge.lock:
            Judge.answered += 1

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:  # one line a request would be the server's main cost
        pass


def start_server() -> ThreadingHTTPServer:
    ThreadingHTTPServer.request_queue_size = 256  # the actors open up to max_concurrency sockets at once
    server = ThreadingHTTPServer(("127.0.0.1", 0), Judge)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="loopback-judge", daemon=True).start()
    return server


def model_config(engine: str):
    """The engine's model, built the way this checkout's ModelConfig takes the API's variables."""
    from jobs.config import ModelConfig

    kind, name = KINDS[engine]
    kwargs = {"name": engine, "path": "loopback-judge" if engine == "http" else "stand_in", "kind": kind,
              "engine": name}
    if engine == "http":
        names = {f.name: f for f in fields(ModelConfig)}
        if "api_base_env" in names:
            kwargs.update(api_base_env=BASE_ENV, api_key_env=KEY_ENV)
        else:  # the engine's own section: its keys under their old flat names in the metadata
            section = names["api"].default_factory()
            flat = {f.metadata.get("flat", f.name): f.name for f in fields(section)}
            kwargs["api"] = replace(section, **{flat["api_base_env"]: BASE_ENV, flat["api_key_env"]: KEY_ENV})
    return ModelConfig(**kwargs)


def run_cell_path(data: Path, engine: str, folder: Path) -> dict:
    from jobs.config import BenchmarkConfig, StorageConfig, SweepConfig
    from jobs.engines.host import EngineHost
    from jobs.store.manifest import Manifest
    from jobs.store.run_root import RunRoot
    from jobs.sweep.cell import Cell, run_cell
    from jobs.sweep.cluster import connect_ray

    settings = StorageConfig(run="lists", root=str(folder))
    sweep = SweepConfig(name="lists", storage=settings)
    connect_ray(sweep)  # a local cluster as `ragjudge run` starts it (each checkout's own settings)
    root = RunRoot.of(settings)
    bench = BenchmarkConfig(name="rag_rewardbench", module="rag_rewardbench", data=[str(data)],
                            bootstrap_resamples=100)
    host = EngineHost(lambda line: None)
    cell = Cell(root, Manifest(root, sweep), bench, model_config(engine), flush_every=settings.flush_every,
                log=lambda line: None, engines=host, flush_s=settings.flush_s)
    start = time.perf_counter()
    outcome = run_cell(cell)
    seconds = time.perf_counter() - start
    host.close()
    metrics = outcome.metrics or {}
    return {"seconds": seconds, "status": outcome.status, "message": outcome.message[:500],
            "requests": (metrics.get("request_errors") or {}).get("requests"), "n": metrics.get("n")}


def child(engine: str, pairs: int, data: Path) -> None:
    import jobs

    print(f"JOBS {jobs.__file__}", flush=True)
    folder = Path(tempfile.mkdtemp(prefix="lists-run-"))
    with PrivatePeak() as private:
        result = run_cell_path(data, engine, folder)
    requests = result["requests"] or 0
    result.update(engine=engine, pairs=pairs, seconds=round(result["seconds"], 1),
                  requests_per_s=round(requests / result["seconds"], 1),
                  driver_peak_rss_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                  driver_peak_private_mib=round(private.peak / 2**20, 1),
                  tree=str(Path(jobs.__file__).parents[1]))  # the checkout whose code ran
    print("RESULT " + json.dumps(result), flush=True)


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the child's session (its driver and the Ray processes it started), SIGKILL after 30 s."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_child(engine: str, pairs: int, data: Path, tree: str, env: dict, args: argparse.Namespace) -> dict:
    """One measured run in a process (and session) of its own, watched from outside for time and memory."""
    log = Path(tempfile.mkstemp(prefix="lists-child-", suffix=".log")[1])
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, __file__, "--child", engine, str(pairs), "--data", str(data)],
                                cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        start, seen, stopped = time.monotonic(), 0, None
        while proc.poll() is None:
            try:
                seen = max(seen, psutil.Process(proc.pid).memory_info().rss)
            except psutil.Error:
                pass
            if time.monotonic() - start > args.timeout_s:
                stopped = f"timeout after {args.timeout_s} s"
            elif seen > args.max_rss_mib * 2**20:
                stopped = f"driver RSS past {args.max_rss_mib} MiB"
            if stopped:
                stop_group(proc)
                break
            time.sleep(1)
    text = log.read_text()
    log.unlink()
    line = next((s for s in text.splitlines() if s.startswith("RESULT ")), None)
    imported = next((s[len("JOBS "):] for s in text.splitlines() if s.startswith("JOBS ")), None)
    run = json.loads(line[len("RESULT "):]) if line else {
        "engine": engine, "pairs": pairs, "status": "stopped" if stopped else "crashed",
        "message": stopped or text[-2000:], "after_s": round(time.monotonic() - start, 1)}
    run.update(jobs_file=imported, driver_rss_seen_mib=round(seen / 2**20, 1), wanted_tree=tree)
    if imported and not imported.startswith(tree + "/"):
        run["status"] = f"wrong tree: imported {imported}"
    return run


def data_for(pairs: int, folder: Path, tree: str) -> Path:
    path = folder / f"pairs-{pairs}.jsonl"
    if not path.exists():
        subprocess.run([sys.executable, __file__, "--make", str(pairs), str(path)], check=True, cwd=tree,
                       env={**os.environ, "PYTHONPATH": tree})
    return path


def table(runs: list[dict]) -> str:
    head = "| engine | tree | pairs | requests | seconds | req/s | peak RSS MiB | peak private MiB | status |"
    lines = [head, "|---" * 9 + "|"]
    for r in runs:
        tree = Path(r.get("wanted_tree", "?")).name
        lines.append(f"| {r['engine']} | {tree} | {r['pairs']:,} | {r.get('requests') or '-'} | "
                     f"{r.get('seconds', r.get('after_s'))} | {r.get('requests_per_s', '-')} | "
                     f"{r.get('driver_peak_rss_mib', '-')} | {r.get('driver_peak_private_mib', '-')} | "
                     f"{r['status']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?")
    parser.add_argument("--engines", default="stand_in,http")
    parser.add_argument("--sizes", default="20000,100000,1000000", help="pairs")
    parser.add_argument("--tree", action="append", help="a checkout whose code runs (repeatable)")
    parser.add_argument("--timeout-s", type=float, default=1800)
    parser.add_argument("--max-rss-mib", type=float, default=8192)
    parser.add_argument("--data-dir", type=Path, help="keep each size's pairs here, for later invocations")
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "PAIRS"), help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--make", nargs=2, metavar=("PAIRS", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make:
        make_data(Path(args.make[1]), int(args.make[0]))
        return
    if args.child:
        child(args.child[0], int(args.child[1]), args.data)
        return
    trees = [str(Path(t).resolve()) for t in args.tree or [ROOT]]
    folder = args.data_dir or Path(tempfile.mkdtemp(prefix="lists-data-"))
    folder.mkdir(parents=True, exist_ok=True)
    server = start_server()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    runs = []
    for engine in args.engines.split(","):
        for pairs in [int(s) for s in args.sizes.split(",")]:
            data = data_for(pairs, folder, trees[0])
            for tree in trees:
                env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
                env.update(PYTHONPATH=tree, **{BASE_ENV: base, KEY_ENV: "loopback-key"})
                Judge.answered = 0
                run = run_child(engine, pairs, data, tree, env, args)
                if engine == "http":
                    run["server_answered"] = Judge.answered
                runs.append(run)
                print(json.dumps(run)[:400], flush=True)
    server.shutdown()
    result = {"command": " ".join(sys.argv), "machine": platform.processor() or platform.machine(),
              "cpus": os.cpu_count(), "scale": SCALE, "runs": runs,
              "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(table(runs))


if __name__ == "__main__":
    main()
