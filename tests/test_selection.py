"""Model selection (planner/selection.py): the split, and the majority of the split, LOOCV and the held-out top
budget."""

import math

import numpy as np
import pytest

from streambed.model import Observation
from streambed.planner.exploration import ExplorerSettings
from streambed.planner.selection import majority_family, select_family, select_features, top_rmse
from streambed.planner.surrogates import loocv_rmse, select_by_split

FAMILIES = ("linear", "log", "sqrt")

# A generated workload's recorded D (section G, seed 0, profile 0): a fixed cost per operator below ~10 slots,
# linear beyond (its truth), and one point (1024 MB, 32 slots) read as low as 24 slots.
GENERATED = [(1024, 9, 143506), (1024, 48, 2788251), (4096, 9, 146392), (4096, 48, 3466802), (1024, 14, 570250),
             (4096, 33, 2205008), (1024, 24, 1386348), (4096, 11, 285518), (1024, 12, 418909), (4096, 13, 566819),
             (1024, 32, 1405288)]


def _observations(rows):
    return [Observation(m, p, float(v)) for m, p, v in rows]


def _chosen(obs):
    s = ExplorerSettings()
    features = select_features(obs, s.features, s.families)
    loocv = {f: loocv_rmse(f, obs, features) for f in s.families}
    return features, loocv, select_family(obs, features, s.families, loocv)


def test_the_majority_overrules_a_split_that_one_low_point_bent():
    obs = _observations(GENERATED)
    features, loocv, (family, rule) = _chosen(obs)
    assert select_by_split(obs, features, FAMILIES)[0] == "sqrt"  # the paper's rule alone
    top = top_rmse(obs, features, FAMILIES)
    assert min(top, key=top.get) == "linear" and min(loocv, key=loocv.get) == "linear"
    assert family == "linear" and "the split chose sqrt" in rule


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_concave_query_keeps_the_family_its_measurements_support(seed):
    """A query that really bends (its MST as sqrt of the slots, 2 % noise): no vote against the split."""
    rng = np.random.default_rng(seed)
    rows = [(m, p, 4e5 * math.sqrt(p) * (1 + 0.02 * rng.standard_normal()) * (1.1 if m == 4096 else 1.0))
            for m in (1024, 4096) for p in (4, 8, 12, 20, 32, 48)]
    obs = _observations(rows)
    features, _, (family, rule) = _chosen(obs)
    assert family != "linear" and rule == "split"


def test_majority_family_needs_both_other_tests_against_the_split():
    loocv = {"linear": 1.0, "log": 3.0, "sqrt": 2.0}
    assert majority_family("sqrt", loocv, {"linear": 1.0, "log": 5.0, "sqrt": 2.0}, FAMILIES) == "linear"
    assert majority_family("sqrt", loocv, {"linear": 3.0, "log": 5.0, "sqrt": 2.0}, FAMILIES) is None  # top: split's
    assert majority_family("linear", loocv, {"linear": 1.0, "log": 5.0, "sqrt": 2.0}, FAMILIES) is None
    assert majority_family("sqrt", loocv, {}, FAMILIES) is None
    assert majority_family("sqrt", loocv, {"linear": math.inf, "log": math.inf, "sqrt": math.inf}, FAMILIES) is None


def test_top_rmse_holds_out_every_memorys_largest_budget():
    obs = _observations([(1024, p, 1e5 * p) for p in (4, 8, 16)] + [(4096, p, 1.2e5 * p) for p in (4, 8, 16)])
    s = ExplorerSettings()
    top = top_rmse(obs, s.features, FAMILIES)
    assert top["linear"] < 0.5 * min(top["log"], top["sqrt"])
    assert top_rmse(_observations([(1024, 4, 1.0), (1024, 16, 2.0)]), s.features, FAMILIES) == {}


def test_the_majority_moves_only_towards_a_family_that_flattens_less():
    loocv = {"linear": 2.0, "log": 3.0, "sqrt": 1.0}
    top = {"linear": 2.0, "log": 5.0, "sqrt": 1.0}
    assert majority_family("linear", loocv, top, FAMILIES) is None  # q11's case: sqrt would end the range early
    assert majority_family("log", loocv, top, FAMILIES) == "sqrt"
