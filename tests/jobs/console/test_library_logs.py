"""The libraries' log file keeps no secret, whichever formatter a library puts on its handler."""
import base64
import logging
import os

from jobs.console.library_logs import RedactedFile
from jobs.store.redaction import DECLARED


def test_a_secret_in_a_library_line_is_redacted_under_any_formatter(tmp_path, monkeypatch):
    secret = "sk-live-9f8e7d6c5b4a"
    monkeypatch.setenv("JUDGE_API_KEY", secret)
    monkeypatch.setenv(DECLARED, "JUDGE_API_KEY")  # as a model's api_key_env declares it
    handler = RedactedFile(tmp_path / "libraries.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s\t%(levelname)s %(filename)s -- %(message)s"))  # Ray's
    logger = logging.getLogger("ray.test_library_logs")
    logger.addHandler(handler)
    try:
        logger.warning("runtime_env {'JUDGE_API_KEY': '%s'} and %s", secret, base64.b64encode(secret.encode()).decode())
    finally:
        logger.removeHandler(handler)
        handler.close()
    text = (tmp_path / "libraries.log").read_text(encoding="utf-8")
    assert "runtime_env" in text and "WARNING" in text
    assert secret not in text and base64.b64encode(secret.encode()).decode() not in text


def test_what_ray_prints_to_the_driver_goes_to_the_file(tmp_path, capfd):
    import ray._private.worker

    from jobs.console import LibraryLogs
    from jobs.store import RunRoot

    root = RunRoot(str(tmp_path), "run")
    original = ray._private.worker.print_to_stdstream
    warning = "WARNING: 12 PYTHON worker processes have been started on node: n1 with address: 10.0.0.1."
    with LibraryLogs(root) as logs:
        # as Ray's thread that listens for the raylets' errors calls it (ray._private.worker)
        ray._private.worker.print_to_stdstream({"lines": [warning], "pid": "raylet", "is_err": False},
                                               ignore_prefix=False)
        logs.say("ragjudge's own line")
    assert ray._private.worker.print_to_stdstream is original
    out, err = capfd.readouterr()
    assert out == "ragjudge's own line\n" and err == ""
    assert f"(raylet) {warning}" in (tmp_path / "run" / "logs" / "libraries.log").read_text(encoding="utf-8")


def test_verbose_leaves_rays_printer_alone(tmp_path):
    import ray._private.worker

    from jobs.console import LibraryLogs
    from jobs.store import RunRoot

    original = ray._private.worker.print_to_stdstream
    with LibraryLogs(RunRoot(str(tmp_path), "run"), verbose=True):
        assert ray._private.worker.print_to_stdstream is original


NATIVE_SCRIPT = """
import os, sys
from jobs.console import LibraryLogs
from jobs.store import RunRoot

with LibraryLogs(RunRoot(sys.argv[1], "run")) as logs:
    # what Ray's core worker does with its errors: a write to fd 2 from C++, past Python's sys.stderr
    os.write(2, b"[2026-11-29 00:00:00,000 E 1 1] core_worker.cc:2465: Actor ... key " + os.environ["JUDGE_API_KEY"].encode() + b"\\n")
    print("ragjudge: a line of ours on stderr", file=sys.stderr)
    logs.say("ragjudge's own line")
os.write(2, b"fd 2 is the console again\\n")
"""


def test_what_native_code_writes_to_stderr_goes_to_the_file_and_ours_still_reaches_the_console(tmp_path):
    """A child process, as `ragjudge run` is: its fd 2 is a real pipe, sys.stderr writes to it."""
    import subprocess
    import sys
    from pathlib import Path

    secret = "sk-live-0a1b2c3d4e5f"
    env = {**os.environ, "JUDGE_API_KEY": secret, DECLARED: "JUDGE_API_KEY"}
    done = subprocess.run([sys.executable, "-c", NATIVE_SCRIPT, str(tmp_path)], capture_output=True, text=True,
                          env=env, cwd=Path(__file__).parents[3], timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ragjudge's own line\n"
    assert done.stderr == "ragjudge: a line of ours on stderr\nfd 2 is the console again\n"
    text = (tmp_path / "run" / "logs" / "libraries.log").read_text(encoding="utf-8")
    assert "ERROR stderr: [2026-11-29 00:00:00,000 E 1 1] core_worker.cc:2465: Actor ... key " in text
    assert secret not in text


def test_the_log_file_lands_in_the_run_on_either_storage_and_leaves_no_temporary_folder(root):
    """An S3 run's file is written in a temporary folder, uploaded at the end and removed; a local run's is
    written in place."""
    import logging

    from jobs.console import LibraryLogs
    from jobs.store.layout import LIBRARY_LOG

    with LibraryLogs(root) as logs:
        logging.getLogger("vllm.engine").warning("KV cache: 1024 blocks")
        written = logs.path
    assert "WARNING vllm.engine: KV cache: 1024 blocks" in root.read_bytes(LIBRARY_LOG).decode()
    assert written.exists() == root.on_this_machine
