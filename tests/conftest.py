"""Shared test settings."""

import os
import socket
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAPER_DATA = Path(os.environ.get("STREAMBED_PAPER_DATA", REPO / "data" / "streambed-paper"))
"""The paper's measurements, vendored under data/ (Apache-2.0; see data/README.md)."""


def port_open(port: int, host: str = "localhost") -> bool:
    """Whether something listens on ``port`` (the deployment tests refuse to run over a leftover one)."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False
