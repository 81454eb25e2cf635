"""The libraries' log file keeps no secret, whichever formatter a library puts on its handler."""
import base64
import logging

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
