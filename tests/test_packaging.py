"""An installed (not editable) copy finds the configs and the bundled data (issue 61): pyproject.toml's data-files
install every file of conf/ and data/ under share/ragjudge/ in the checkout's own layout."""
from __future__ import annotations

from pathlib import Path

import tomllib

from benchmarks.paths import CHECKOUT


def test_every_file_of_conf_and_data_is_installed_where_an_installed_copy_looks():
    data_files = tomllib.loads((CHECKOUT / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    installed = {str(Path(target) / Path(f).name): f for target, patterns in data_files.items()
                 for pattern in patterns for f in map(str, CHECKOUT.glob(pattern)) if Path(f).is_file()}
    files = [p.relative_to(CHECKOUT) for base in ("conf", "data") for p in (CHECKOUT / base).rglob("*")
             if p.is_file() and not p.name.startswith(".") and "__pycache__" not in p.parts]
    missing = [str(f) for f in files if f"share/ragjudge/{f}" not in installed]
    assert not missing, f"not installed by pyproject.toml's data-files: {missing}"
    moved = [source for target, source in installed.items()
             if Path(source) != CHECKOUT / target.removeprefix("share/ragjudge/")]
    assert not moved, f"installed elsewhere than their checkout path: {moved}"
