"""jobs.sweep.answer_parts.answered_parts without Ray: parts of answers as they stream in; a stop reaches a cell whose
engine is silent, and the answers it holds come out as one last part. (Real signals to a real driver:
test_signals.py.)"""
import signal
import threading
import time

import pytest

from jobs.sweep.answer_parts import answered_parts
from jobs.sweep.interrupt import Interrupted, Stop


def _engine(answers: int, then: threading.Event):
    """`answers` rows at once, then silence until `then` is set (an engine holding its next request)."""
    yield from ({"request_id": str(i)} for i in range(answers))
    then.wait(timeout=30)
    yield {"request_id": "late"}


def test_parts_of_size_then_the_rest():
    never = threading.Event()
    never.set()
    parts = list(answered_parts(_engine(5, never), 2, Stop()))
    assert [[row["request_id"] for row in part] for part in parts] == [["0", "1"], ["2", "3"], ["4", "late"]]


def test_a_stop_while_the_engine_is_silent_yields_the_answers_held_then_interrupts():
    held, stop = threading.Event(), Stop()
    parts = answered_parts(_engine(5, held), 4, stop)
    assert [row["request_id"] for row in next(parts)] == ["0", "1", "2", "3"]
    threading.Timer(0.3, stop.request, args=(signal.SIGTERM,)).start()
    start = time.perf_counter()
    assert [row["request_id"] for row in next(parts)] == ["4"]  # held, though the part is not full
    with pytest.raises(Interrupted, match="SIGTERM"):
        next(parts)
    assert time.perf_counter() - start < 10  # a hang guard: the engine is silent for 30 s
    held.set()
    assert stop.exit_code == 143 and stop.record()["signal"] == "SIGTERM"


def test_a_part_is_stored_once_its_first_answer_has_waited_flush_s_while_the_engine_is_silent():
    held = threading.Event()
    parts = answered_parts(_engine(3, held), 100, Stop(), seconds=0.5)
    start = time.perf_counter()
    assert [row["request_id"] for row in next(parts)] == ["0", "1", "2"]  # 3 of 100: due, not full
    waited = time.perf_counter() - start
    held.set()
    assert [row["request_id"] for row in next(parts)] == ["late"]
    assert list(parts) == []
    assert 0.4 <= waited < 10  # not before it was due (the engine stays silent for 30 s)


def test_an_engine_error_is_raised_in_the_cells_thread():
    def failing():
        yield {"request_id": "0"}
        raise RuntimeError("engine died")

    with pytest.raises(RuntimeError, match="engine died"):
        list(answered_parts(failing(), 8, Stop()))


def _counted(read: list[int]):
    """An engine with answers without end, counting in `read` how many the cell's thread has taken."""
    i = 0
    while True:
        read[0] = i
        yield {"request_id": str(i)}
        i += 1


def _settled(read: list[int]) -> int:
    """`read` once the pump has taken no answer for a second (the wait bounded at 10 s)."""
    deadline, last, still = time.monotonic() + 10, -1, 0
    while still < 5 and time.monotonic() < deadline:
        time.sleep(0.2)
        still, last = (still + 1, last) if read[0] == last else (0, read[0])
    return read[0]


def test_the_engines_stream_runs_at_most_two_parts_ahead_of_the_cell():
    read = [0]
    parts = answered_parts(_counted(read), 5, Stop())
    assert [row["request_id"] for row in next(parts)] == ["0", "1", "2", "3", "4"]
    # 5 taken, 10 queued (two parts) and the 16th, index 15, in the pump's hand; unbounded it never stops
    assert _settled(read) == 5 + 2 * 5
    assert [row["request_id"] for row in next(parts)] == ["5", "6", "7", "8", "9"]
    assert _settled(read) == 10 + 2 * 5
    parts.close()


def test_a_pump_waiting_for_room_ends_once_the_cell_stops():
    read, stop, before = [0], Stop(), set(threading.enumerate())
    parts = answered_parts(_counted(read), 3, stop)
    next(parts)
    _settled(read)
    stop.request(signal.SIGTERM)
    with pytest.raises(Interrupted):
        list(parts)  # one last part of what was queued, then the stop
    [pump] = [t for t in set(threading.enumerate()) - before if t.name == "answers"]
    pump.join(timeout=5)
    assert not pump.is_alive()
