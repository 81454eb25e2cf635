"""Where the bundled real data lies (data/ in the repository; its README gives each file's source)."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data"
CORPUS = str(DATA / "mtrag" / "corpus")
RETRIEVAL = str(DATA / "mtrag" / "retrieval")
GENERATION = DATA / "mtrag" / "generation"
