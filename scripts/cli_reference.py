"""Writes docs/cli.md, the reference of every `ragjudge` verb, from the argparse parsers themselves: each verb's
help line and its full `--help` text, so the page says what the code accepts. Run it after changing a verb:

    python scripts/cli_reference.py            # rewrites docs/cli.md
    python scripts/cli_reference.py --check    # exit 1 when docs/cli.md differs (tests/scripts/test_cli_reference.py)

The parser is built as `ragjudge` builds it (jobs/cli/__init__.py, `main`): a `ragjudge` parser, its
subparsers, then `verb.add(commands)` for each of jobs.cli.VERBS. The text does not depend on the terminal:
every parser formats at WIDTH columns (argparse otherwise wraps to $COLUMNS), and the checkout's own path,
should a default name it, is written as `<repo>`."""
from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as `python scripts/cli_reference.py` from anywhere
    sys.path.insert(0, str(REPO))

import jobs.cli  # after the path above

OUT = REPO / "docs" / "cli.md"
WIDTH = 100  # columns every --help text is wrapped to, whatever the terminal
COMMAND = "python scripts/cli_reference.py"


def build_parser() -> argparse.ArgumentParser:
    """The `ragjudge` parser, built as jobs.cli.main builds it."""
    parser = argparse.ArgumentParser(prog="ragjudge", description=jobs.cli.DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True)
    for verb in jobs.cli.VERBS:
        verb.add(commands)
    return parser


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, help line, parser) of each subcommand of `parser`, in the order they were added (aliases once)."""
    found, seen = [], set()
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, sub in action.choices.items():
            if id(sub) not in seen:
                seen.add(id(sub))
                found.append((name, helps.get(name, ""), sub))
    return found


def _fix_width(parser: argparse.ArgumentParser) -> None:
    """Format `parser` and every parser below it at WIDTH columns, keeping each one's formatter class."""
    formatter = parser.formatter_class
    while isinstance(formatter, functools.partial):
        formatter = formatter.func
    parser.formatter_class = functools.partial(formatter, width=WIDTH)
    if hasattr(parser, "color"):  # Python 3.14 colours help on a terminal: never in the page
        parser.color = False
    for _, _, sub in _subcommands(parser):
        _fix_width(sub)


def _help_text(parser: argparse.ArgumentParser) -> str:
    return parser.format_help().rstrip().replace(str(REPO), "<repo>")


def _anchor(words: str) -> str:
    """GitHub's anchor of a heading `ragjudge cache ls` written in backticks."""
    return "-".join(words.lower().split())


def _section(words: str, help_line: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    lines = [f"{'#' * level} `{words}`", ""]
    if help_line:
        lines += [help_line[0].upper() + help_line[1:] + ("" if help_line.endswith(".") else "."), ""]
    lines += ["```text", _help_text(parser), "```", ""]
    for name, sub_help, sub in _subcommands(parser):
        lines += _section(f"{words} {name}", sub_help, sub, level + 1)
    return lines


def render() -> str:
    """docs/cli.md as the parsers make it now."""
    parser = build_parser()
    _fix_width(parser)
    verbs = _subcommands(parser)
    lines = ["# `ragjudge` command reference", "",
             f"Generated from the argparse parsers of `jobs/cli/` by `{COMMAND}`: do not edit it",
             "by hand; run that script after changing a verb (tests/scripts/test_cli_reference.py fails while this",
             "page and the parsers differ). The README shows the commands in use; docs/guide.md explains what each",
             "one does in detail.", "",
             "| verb | what it does |", "|---|---|"]
    lines += [f"| [`{name}`](#{_anchor('ragjudge ' + name)}) | {help_line.replace('|', chr(92) + '|')} |"
              for name, help_line, _ in verbs]
    lines += ["", "## `ragjudge`", "", "```text", _help_text(parser), "```", ""]
    for name, help_line, sub in verbs:
        lines += _section(f"ragjudge {name}", help_line, sub, 2)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/cli.md from the `ragjudge` argparse parsers.")
    parser.add_argument("--check", action="store_true", help="only say whether docs/cli.md is up to date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT.relative_to(REPO)} is out of date: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)} ({len(verbs_of(text))} verbs)")
    return 0


def verbs_of(text: str) -> list[str]:
    """The verbs a rendered page documents (its `## \\`ragjudge VERB\\`` headings)."""
    return [line[len("## `ragjudge "):-1] for line in text.splitlines() if line.startswith("## `ragjudge ")]


if __name__ == "__main__":
    sys.exit(main())
