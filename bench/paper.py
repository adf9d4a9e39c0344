"""The StreamBed paper's published results (Rosinosky, Schmitz, Rivière, DEBS 2024), the reference
that evaluation and tests compare StreamBed's numbers with. Values as printed in the paper.

Memory is per task slot in MB (the paper's 0.5/1/2/4 GB profiles); the paper's data files give
TaskManager memory instead (16 slots each, see streambed/records.py).
"""

from __future__ import annotations

QUERIES = ("q1", "q2", "q5", "q8", "q11")
"""The Nexmark queries the paper evaluates (Table II)."""

TABLE_III_FAMILY = {"q1": "linear", "q2": "linear", "q5": "log", "q8": "sqrt", "q11": "linear"}
"""The surrogate family the paper used per query (Table III; chosen by hand, see docs/evaluation.md)."""

TABLE_IV_RATE = {"q1": 160e6, "q2": 190e6, "q5": 2.5e6, "q8": 15e6, "q11": 20e6}
"""The requested rate per query, events/s (Table IV)."""

TABLE_IV_SLOTS = {
    "q1": {512: 179, 1024: 179, 2048: 179, 4096: 178},
    "q2": {512: 69, 1024: 69, 2048: 69, 4096: 69},
    "q5": {2048: 1069, 4096: 1079},
    "q8": {2048: 179, 4096: 176},
    "q11": {512: 565, 1024: 564, 2048: 562, 4096: 559},
}
"""Planned task slots per memory profile (Table IV, with the 1.10 safety factor); q5 and q8 were
not planned at 0.5 and 1 GB ("-")."""
