"""Files a benchmark's options name (prompts, runs, baselines) are relative to the project root, so a config
reads the same files from any working directory. The project root is the checkout the code runs from (a clone,
or an editable install), else where an installed copy keeps conf/ and data/ (pyproject.toml's data-files)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
INSTALLED = Path(sys.prefix) / "share" / "ragjudge"
PROJECT_ROOT = CHECKOUT if (CHECKOUT / "conf").is_dir() else INSTALLED


def project_path(path: str) -> Path:
    """`path` itself when absolute, else relative to the project root."""
    return Path(path) if os.path.isabs(path) else PROJECT_ROOT / path
