"""docs/cli.md is what scripts/cli_reference.py makes from the `ragjudge` parsers now, whatever the terminal (no
Ray, no engine: the parsers only)."""
from __future__ import annotations

import difflib

import pytest

import jobs.cli
from scripts.cli_reference import COMMAND, OUT, build_parser, render, verbs_of


def test_docs_cli_md_is_what_the_parsers_make():
    made, written = render(), OUT.read_text(encoding="utf-8") if OUT.exists() else ""
    if made != written:
        diff = "".join(list(difflib.unified_diff(written.splitlines(True), made.splitlines(True),
                                                 "docs/cli.md", "the parsers now"))[:40])
        pytest.fail(f"docs/cli.md differs from the ragjudge parsers: run `{COMMAND}` and commit docs/cli.md\n{diff}",
                    pytrace=False)


def test_every_verb_has_its_section():
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    names = [name for name, parser in commands.items() if next(n for n, p in commands.items() if p is parser) == name]
    assert verbs_of(render()) == names  # an alias is its verb's, not a section of its own
    assert len(names) == len(jobs.cli.VERBS)


@pytest.mark.parametrize("columns", ["40", "250"])
def test_the_page_does_not_depend_on_the_terminal(monkeypatch, columns):
    expected = render()
    monkeypatch.setenv("COLUMNS", columns)
    assert render() == expected
