"""The driver gives freed pages back where its C library can (glibc's malloc_trim) and does nothing elsewhere."""
import ctypes
import ctypes.util
import platform

import pytest

from jobs.flow import freed_memory


@pytest.fixture(autouse=True)
def fresh_lookup():
    freed_memory._malloc_trim.cache_clear()
    yield
    freed_memory._malloc_trim.cache_clear()


def test_found_where_the_c_library_is_glibc():
    assert (freed_memory._malloc_trim() is not None) == (platform.libc_ver()[0] == "glibc")
    freed_memory.trim_heap()


class NoTrim:
    """A C library without malloc_trim (musl, macOS's libSystem)."""

    def __init__(self, name):
        self.name = name

    def __getattr__(self, symbol):
        raise AttributeError(symbol)


def test_a_c_library_without_malloc_trim_is_left_alone(monkeypatch):
    monkeypatch.setattr(ctypes, "CDLL", NoTrim)
    assert freed_memory._malloc_trim() is None
    freed_memory.trim_heap()  # nothing to call, nothing raised


def test_no_c_library_found(monkeypatch):
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    assert freed_memory._malloc_trim() is None
