"""Files a benchmark's options name (prompts, runs, baselines) are relative to the project root, so a config
reads the same files from any working directory."""
from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def project_path(path: str) -> Path:
    """`path` itself when absolute, else relative to the project root."""
    return Path(path) if os.path.isabs(path) else PROJECT_ROOT / path
