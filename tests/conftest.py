"""Shared test settings."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAPER_DATA = Path(os.environ.get("STREAMBED_PAPER_DATA", REPO / "data" / "streambed-paper"))
"""The paper's measurements, vendored under data/ (Apache-2.0; see data/README.md)."""
