"""How well the shipped Nexmark profiles match the StreamBed paper.

Three checks per profile, all measured on the engine (ground truth, :mod:`streambed.testbed.sim.truth`):

* the single-task MST at 4 GB against Table II's minimal rate (within 15 %);
* the scaling shape over the paper's testbed (best configurations from the number of operators to
  48 slots, 4 GB): which of the linear / log / sqrt families of Eq. 6-8 fits best in P;
* memory: the MST at 0.5 and 1 GB relative to 4 GB, single task and at 48 slots (q5 and q8 are
  poor there, Fig. 9).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model import FAMILIES, Observation
from ..planner.surrogates import fit

from ..testbed.sim.profile import load_profile
from ..testbed.sim.truth import GroundTruth, TruthSettings

REFERENCE_MEMORY = 4096
TESTBED_SLOTS = 48


def family_rmse(slots, mst) -> dict[str, float]:
    """Relative RMSE of the explorer's surrogate families (Eq. 6-8) fitted to mst over P at one
    memory per slot."""
    obs = [Observation(REFERENCE_MEMORY, int(p), float(y)) for p, y in zip(slots, mst)]
    y = np.asarray(mst, dtype=float)
    out = {}
    for fam in FAMILIES:
        model = fit(fam, obs)
        pred = model.predict(REFERENCE_MEMORY, np.asarray(slots, dtype=float))
        out[fam] = float(np.sqrt(np.mean((pred - y) ** 2)) / y.mean())
    return out


@dataclass
class CalibrationRow:
    profile: str
    single_task_mst: float
    paper_mst: float | None
    shape: str
    paper_shape: str | None
    fit_rmse: dict[str, float]
    curve: dict[int, float]
    memory: dict[int, dict[str, float]] = field(default_factory=dict)
    """memory MB -> {"single": ratio to 4 GB, "testbed": ratio to 4 GB at 48 slots}."""

    @property
    def ratio(self) -> float | None:
        return self.single_task_mst / self.paper_mst if self.paper_mst else None

    def to_dict(self) -> dict:
        return {
            "profile": self.profile,
            "single_task_mst": self.single_task_mst,
            "paper_single_task_mst": self.paper_mst,
            "ratio": self.ratio,
            "shape": self.shape,
            "paper_shape": self.paper_shape,
            "fit_relative_rmse": self.fit_rmse,
            "mst_by_slots": {str(k): v for k, v in self.curve.items()},
            "memory_ratio_to_4GB": {str(k): v for k, v in self.memory.items()},
        }


def calibrate(name: str, settings: TruthSettings | None = None, slots: list[int] | None = None,
              memories: tuple[int, ...] = (512, 1024)) -> CalibrationRow:
    profile = load_profile(name)
    gt = GroundTruth(profile, settings)
    n = len(profile.operators)
    grid = sorted({n, *(p for p in (slots or [16, 24, 32, 40, TESTBED_SLOTS]) if p >= n)})
    curve = {p: gt.true_mst(p, REFERENCE_MEMORY).mst for p in grid}
    fits = family_rmse(list(curve), list(curve.values()))
    memory = {}
    for m in memories:
        memory[m] = {
            "single": gt.true_mst(n, m).mst / curve[n],
            "testbed": gt.true_mst(TESTBED_SLOTS, m).mst / curve[TESTBED_SLOTS],
        }
    ref = profile.reference
    return CalibrationRow(profile.name, curve[n], ref.single_task_mst, min(fits, key=fits.get), ref.shape, fits,
                          curve, memory)
