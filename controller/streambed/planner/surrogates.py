"""Surrogate models of the Resource Explorer (paper section VI, Eq. 5-9).

The Resource Explorer (RE) models the maximum sustainable throughput (MST) of a query as a function
of the memory per task slot M and the number of task slots P (Eq. 5, f(M, P) = lambda_src) with one
of three linear regressions (Eq. 6-8)::

    linear:  a*M       + b*P       + c
    log:     a*log M   + b*log P   + c
    sqrt:    a*sqrt(M) + b*sqrt(P) + c

This module holds pure functions over those models:

* :func:`fit`: ordinary least squares of the MST on ``[g(M), g(P), 1]``.
* :func:`loocv_rmse`: the leave-one-out cross-validation RMSE ("Model performance").
* :func:`select_by_loocv`: Eq. 9, the family with the lowest LOOCV RMSE (the BO cost function).
* :func:`select_by_split`: "Model selection": train on the half of the observations with the
  lowest P, test on the other half.
* :func:`inverse_solve`: "Model usage": the smallest P whose prediction reaches 110 % of the
  requested rate.
* :func:`paper_prefix_fit`: the procedure of the paper's artifact (``final-r6-plots.ipynb``),
  which produced Tables III and IV: fit the first k search rows for k = 5..20 and keep the k with
  the lowest LOOCV RMSE.

How M enters the models is set by :class:`Features`. The paper's text writes M as memory per task
slot and ``log``; its artifact uses the **TaskManager** memory in MB (16 slots per TaskManager) and
``log1p`` (see ``data/streambed-paper/README.md``, step 2). The defaults follow the
artifact, so that the fitted coefficients and Table IV are reproduced. :class:`Observation` and the
``memory_mb`` arguments are always memory per *slot*; :class:`Features` converts.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from ..model import FAMILIES, Features, Observation, Surrogate, check_family

AGGREGATES = ("rmse", "fold_mean")
"""How leave-one-out errors are aggregated: pooled RMSE, or the artifact's mean of per-fold RMSEs."""

# A leave-one-out point whose leverage is this close to 1 is not handled by the hat-matrix identity
# (its removal changes the rank of the design); it is refitted explicitly instead.
_LEVERAGE_LIMIT = 1.0 - 1e-8
# inverse_solve scans non-monotone models in chunks of this many slot counts.
_SCAN_CHUNK = 1 << 16


class _NotIdentifiable(ValueError):
    """The observations do not determine the model's coefficients (too few or collinear)."""


def _arrays(family: str, observations: Sequence[Observation], features: Features):
    """Transformed columns g(M), g(P) and the target y. Validates the input."""
    check_family(family)
    obs = list(observations)
    for o in obs:
        if not isinstance(o, Observation):
            raise ValueError(f"expected Observation instances, got {type(o).__name__}")
    m = features.memory_value(np.array([o.memory_mb for o in obs], dtype=float))
    p = np.array([o.slots for o in obs], dtype=float)
    y = np.array([o.mst for o in obs], dtype=float)
    if not np.all(np.isfinite(y)):
        raise ValueError("every observation needs a finite mst")
    return features.transform(family, m), features.transform(family, p), y


def _active(gm: np.ndarray, gp: np.ndarray) -> tuple[bool, bool]:
    """Which features vary (a constant feature's coefficient is not identifiable and is set to 0)."""
    return bool(np.ptp(gm) > 0) if gm.size else False, bool(np.ptp(gp) > 0) if gp.size else False


def _columns(gm: np.ndarray, gp: np.ndarray, interaction: bool = False) -> list[tuple[str, np.ndarray]]:
    """The design's varying columns by coefficient name: a (g(M)), b (g(P)) and, with the
    interaction, d (g(M) g(P), only where both vary)."""
    use_m, use_p = _active(gm, gp)
    cols = [(name, col) for name, col, use in (("a", gm, use_m), ("b", gp, use_p)) if use]
    if interaction and use_m and use_p:
        cols.append(("d", gm * gp))
    return cols


def _n_params(gm: np.ndarray, gp: np.ndarray, interaction: bool = False) -> int:
    return 1 + len(_columns(gm, gp, interaction))


def _predict(coefs: tuple[float, float, float, float], gm, gp):
    a, b, c, d = coefs
    return a * gm + b * gp + c + d * gm * gp


def _solve(gm: np.ndarray, gp: np.ndarray, y: np.ndarray, interaction: bool = False
           ) -> tuple[float, float, float, float]:
    """OLS of y on [gm, gp, 1] (and gm gp with the interaction); a constant feature gets
    coefficient 0 (fit on the others only). Returns (a, b, c, d).

    Columns are centred and scaled before the least-squares solve (as scikit-learn's
    LinearRegression centres them); the solution is the same OLS, better conditioned.
    Raises _NotIdentifiable when the remaining design is rank-deficient.
    """
    n = y.size
    if n < 2:
        raise _NotIdentifiable(f"a fit needs at least 2 observations, got {n}")
    named = _columns(gm, gp, interaction)
    names, cols = [nm for nm, _ in named], [col for _, col in named]
    y_mean = float(np.mean(y))
    if not cols:
        return 0.0, 0.0, y_mean, 0.0
    x = np.column_stack(cols)
    x_mean = x.mean(axis=0)
    xc = x - x_mean
    scale = np.sqrt(np.mean(xc * xc, axis=0))
    z = xc / scale
    beta, _, rank, _ = np.linalg.lstsq(z, y - y_mean, rcond=None)
    if rank < z.shape[1]:
        raise _NotIdentifiable(
            f"the observations do not determine the model: {n} observation(s) with memory and "
            "slots on one line after the transform (need more, or more varied, budgets)"
        )
    beta = beta / scale
    coefs = dict(zip(names, (float(v) for v in beta)))
    c = y_mean - float(np.dot(beta, x_mean))
    return coefs.get("a", 0.0), coefs.get("b", 0.0), c, coefs.get("d", 0.0)


def fit(family: str, observations: Sequence[Observation], features: Features = Features()) -> Surrogate:
    """Fit one surrogate family (Eq. 6, 7 or 8) by ordinary least squares of MST on [g(M), g(P), 1].

    Paper section VI: "The three linear regressions are given in equations 6, 7, and 8, with a and
    b the slopes ... applied to the quantity of memory and task slots, and c the intercept".

    If every observation has the same memory, ``a`` is not identifiable: it is set to 0 and the
    fit is on [g(P), 1] only (likewise ``b = 0`` if every observation has the same slots, which is
    what scikit-learn's minimum-norm solution gives; such a model cannot be inverted).

    Raises ValueError with fewer than 2 observations, an unknown family, non-positive memory or
    slots for the log and sqrt families, or observations that do not determine the coefficients
    (e.g. 2 observations differing in both memory and slots).
    """
    gm, gp, y = _arrays(family, observations, features)
    if y.size < 2:
        raise ValueError(f"fit needs at least 2 observations, got {y.size}")
    a, b, c, d = _solve(gm, gp, y, features.interaction)
    return Surrogate(family=family, a=a, b=b, c=c, features=features, d=d)


def bootstrap_fits(family: str, observations: Sequence[Observation], features: Features = Features(), *,
                   samples: int = 400, seed: int = 0) -> list[Surrogate]:
    """The family refitted on ``samples`` resamples (with replacement) of the observations: the
    spread of the fitted curve that the measurements allow, for the plan's risk bound. Resamples
    that cannot determine a slope in P (a single slot count) are skipped; the draws come from
    ``seed`` alone, so a campaign replayed from its ledger gets the same fits."""
    obs = list(observations)
    rng = np.random.default_rng(np.random.SeedSequence([seed, len(obs)]))
    fits = []
    for _ in range(samples):
        sample = [obs[i] for i in rng.integers(0, len(obs), size=len(obs))]
        if len({o.slots for o in sample}) < 2:
            continue
        try:
            fits.append(fit(family, sample, features))
        except ValueError:
            continue
    return fits


def predictions(fits: Sequence[Surrogate], memory_mb: float, slots) -> np.ndarray:
    """Each fit's prediction at ``slots`` (fits x slots)."""
    p = np.atleast_1d(np.asarray(slots, dtype=float))
    return np.array([f.predict(np.full(p.shape, float(memory_mb)), p) for f in fits]).reshape(len(fits), p.size)


def _loo_residuals_refit(gm, gp, y, interaction: bool = False) -> np.ndarray:
    n = y.size
    out = np.empty(n)
    keep = np.ones(n, dtype=bool)
    for i in range(n):
        keep[i] = False
        coefs = _solve(gm[keep], gp[keep], y[keep], interaction)
        keep[i] = True
        out[i] = y[i] - _predict(coefs, gm[i], gp[i])
    return out


def _loo_residuals_hat(gm, gp, y, interaction: bool = False) -> np.ndarray:
    """e_i / (1 - h_ii), with h the hat matrix of the full fit; exact for OLS.

    Points of leverage ~1 (their removal changes the rank of the design, e.g. the only
    observation at some memory value) are refitted explicitly, as :func:`fit` would.
    """
    n = y.size
    resid = y - _predict(_solve(gm, gp, y, interaction), gm, gp)
    cols = [col for _, col in _columns(gm, gp, interaction)]
    lev = np.full(n, 1.0 / n)
    if cols:
        xc = np.column_stack(cols)
        xc = xc - xc.mean(axis=0)
        xc = xc / np.sqrt(np.mean(xc * xc, axis=0))
        q, _ = np.linalg.qr(xc)
        # centred columns are orthogonal to the intercept column: H = 11'/n + QQ'
        lev = lev + np.sum(q * q, axis=1)
    out = np.empty(n)
    ok = lev < _LEVERAGE_LIMIT
    out[ok] = resid[ok] / (1.0 - lev[ok])
    keep = np.ones(n, dtype=bool)
    for i in np.flatnonzero(~ok):
        keep[i] = False
        coefs = _solve(gm[keep], gp[keep], y[keep], interaction)
        keep[i] = True
        out[i] = y[i] - _predict(coefs, gm[i], gp[i])
    return out


def loocv_rmse(
    family: str,
    observations: Sequence[Observation],
    features: Features = Features(),
    *,
    method: str = "hat",
    aggregate: str = "rmse",
) -> float:
    """Leave-one-out cross-validation RMSE of one family (section VI, "Model performance").

    "For each observation in the data set, we evaluate if the model trained on all other
    observations provides a good (low) RMSE value": each observation is predicted by the model
    fitted (as :func:`fit` does) on all the others; the result is sqrt(mean(error^2)).

    ``method="hat"`` (default) uses the exact identity e_i / (1 - h_ii) of OLS, falling back to a
    refit for points of leverage ~1; ``method="refit"`` refits n times. Both give the same value.

    ``aggregate="rmse"`` (default) pools the n leave-one-out errors: sqrt(mean(e_i^2)).
    ``aggregate="fold_mean"`` is what the paper's artifact computed and reported as "LOOCV RMSE"
    (Table III, model_fits.csv): scikit-learn's ``cross_val_score(LeaveOneOut(),
    scoring="neg_root_mean_squared_error").mean()``, the mean over the folds of each one-point
    fold's RMSE, i.e. mean(|e_i|). Use it to reproduce the artifact's prefix and model choices.

    Returns ``inf`` when the data cannot be cross-validated: every leave-one-out fit needs more
    observations than the model has parameters (n - 1 > p, with p = 3, or 2 when all observations
    share one memory value), and a determined fit. Raises ValueError for an unknown family or
    non-positive memory or slots with log and sqrt.
    """
    if method not in ("hat", "refit"):
        raise ValueError(f"method must be 'hat' or 'refit', got {method!r}")
    _check_aggregate(aggregate)
    gm, gp, y = _arrays(family, observations, features)
    n = y.size
    if n < 2 or n - 1 <= _n_params(gm, gp, features.interaction):
        return math.inf
    try:
        if method == "hat":
            e = _loo_residuals_hat(gm, gp, y, features.interaction)
        else:
            e = _loo_residuals_refit(gm, gp, y, features.interaction)
    except _NotIdentifiable:
        return math.inf
    if aggregate == "fold_mean":
        return float(np.mean(np.abs(e)))
    return float(np.sqrt(np.mean(e * e)))


def _check_aggregate(aggregate: str) -> None:
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {AGGREGATES}, got {aggregate!r}")


def _argmin_first(scores: dict[str, float], families: Sequence[str]) -> str:
    best = None
    for fam in families:
        if best is None or scores[fam] < scores[best]:
            best = fam
    return best


def _check_families(families: Iterable[str]) -> tuple[str, ...]:
    fams = tuple(families)
    if not fams:
        raise ValueError("need at least one surrogate family")
    for fam in fams:
        check_family(fam)
    return fams


def select_by_loocv(
    observations: Sequence[Observation],
    features: Features = Features(),
    families: Sequence[str] = FAMILIES,
    *,
    aggregate: str = "rmse",
) -> tuple[str, dict[str, float]]:
    """Eq. 9: BestModel(D) = argmin over families of LOOCV(D, model).

    Returns the chosen family (ties go to the first in ``families`` order) and every family's
    LOOCV score (:func:`loocv_rmse` with ``aggregate``; ``"fold_mean"`` is the artifact's score).
    Raises ValueError if no family can be cross-validated on these observations.
    """
    fams = _check_families(families)
    _check_aggregate(aggregate)
    scores = {fam: loocv_rmse(fam, observations, features, aggregate=aggregate) for fam in fams}
    best = _argmin_first(scores, fams)
    if not math.isfinite(scores[best]):
        raise ValueError(
            f"cannot cross-validate any family on {len(list(observations))} observation(s): "
            "need more observations than parameters in every leave-one-out fit"
        )
    return best, scores


def split_size(ordered: Sequence[Observation], features: Features = Features()) -> int:
    """How many of the lowest-P observations train in select_by_split: half of them (``n // 2``), or
    one more while that half holds no more points than the model has coefficients and the rest keeps
    two. A fit through as many points as coefficients passes through each exactly: every family
    then extrapolates the two or three lowest budgets' noise, and the test judges that noise, not
    the family (5 measurements of q11 on the local testbed, 2 training points: log chose itself on
    a 7-slot point read 30 % low; 3 training points: linear, on both runs)."""
    n = len(ordered)
    n_train = n // 2
    while n_train < n - 2:
        gm, gp, _ = _arrays("linear", ordered[:n_train], features)
        if n_train > _n_params(gm, gp, features.interaction):
            break
        n_train += 1
    return n_train


def select_by_split(
    observations: Sequence[Observation],
    features: Features = Features(),
    families: Sequence[str] = FAMILIES,
) -> tuple[str, dict[str, float]]:
    """Section VI, "Model selection": choose the family that extrapolates best in P.

    "The first half of D with observations with the lowest values of Π serves as the training set.
    The other half serves as the test set. ... The model with the lowest average RMSE for points in
    the test set is selected." Observations are sorted by (slots, memory) (stable); the first
    ``n // 2`` train (one more where that half would fit exactly: split_size), the rest test.
    Returns the chosen family (ties go to the first in ``families`` order) and every family's test
    RMSE. As the paper says, the chosen family should
    then be fitted on the whole of D, not on the training half.

    Raises ValueError if a half is too small (the training half cannot be fitted, or is empty).
    """
    fams = _check_families(families)
    obs = sorted(observations, key=lambda o: (o.slots, o.memory_mb))
    n_train = split_size(obs, features)
    train, test = obs[:n_train], obs[n_train:]
    if n_train < 2 or not test:
        raise ValueError(
            f"select_by_split needs at least 4 observations (2 to train on), got {len(obs)}"
        )
    scores: dict[str, float] = {}
    for fam in fams:
        try:
            model = fit(fam, train, features)
        except _NotIdentifiable as exc:
            raise ValueError(f"the training half (lowest {n_train} P) is too small to fit: {exc}") from exc
        pred = model.predict(
            np.array([o.memory_mb for o in test], dtype=float), np.array([o.slots for o in test], dtype=float)
        )
        err = pred - np.array([o.mst for o in test], dtype=float)
        scores[fam] = float(np.sqrt(np.mean(err * err)))
    return _argmin_first(scores, fams), scores


def inverse_solve(
    surrogate: Surrogate,
    memory_mb: float,
    rate: float,
    *,
    safety: float = 1.10,
    min_slots: int = 1,
    max_slots: int = 100_000,
) -> int | None:
    """Section VI, "Model usage": the task slots needed to sustain ``rate`` at ``memory_mb`` per slot.

    "We incrementally increase Π until the predicted capacity matches or exceeds the request",
    interrogating the model "with 110% (by default) of the requested rate". Returns the smallest
    integer P in [min_slots, max_slots] with ``predict(memory_mb, P) >= safety * rate``, or None if
    there is none; the same answer as that incremental loop, without looping in Python:

    * b > 0 (b + d g(M) with the interaction): the prediction is non-decreasing in P (g is increasing for every family, and so is
      its floating-point evaluation), so a bisection over the integers finds the first P.
    * b <= 0: no monotonicity is assumed; the range is scanned vectorized, in chunks.
    """
    for name, v in (("min_slots", min_slots), ("max_slots", max_slots)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"{name} must be an integer, got {v!r}")
    if min_slots < 1:
        raise ValueError(f"min_slots must be >= 1, got {min_slots}")
    if max_slots < min_slots:
        raise ValueError(f"max_slots ({max_slots}) must be >= min_slots ({min_slots})")
    if not (math.isfinite(safety) and safety > 0):
        raise ValueError(f"safety must be a positive number, got {safety!r}")
    if not math.isfinite(rate):
        raise ValueError(f"rate must be a finite number, got {rate!r}")
    if not (math.isfinite(memory_mb) and memory_mb > 0):
        raise ValueError(f"memory_mb must be a positive number, got {memory_mb!r}")
    target = safety * rate
    lo, hi = int(min_slots), int(max_slots)

    if surrogate.slot_slope(memory_mb) > 0:
        if surrogate.predict(memory_mb, hi) < target:
            return None
        if surrogate.predict(memory_mb, lo) >= target:
            return lo
        # invariant: predict(lo) < target <= predict(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if surrogate.predict(memory_mb, mid) >= target:
                hi = mid
            else:
                lo = mid
        return hi

    for start in range(lo, hi + 1, _SCAN_CHUNK):
        p = np.arange(start, min(start + _SCAN_CHUNK, hi + 1), dtype=float)
        hits = np.flatnonzero(surrogate.predict(np.full(p.shape, float(memory_mb)), p) >= target)
        if hits.size:
            return int(p[hits[0]])
    return None


def paper_prefix_fit(
    family: str,
    observations_in_order: Sequence[Observation],
    features: Features = Features(),
    k_min: int = 5,
    k_max: int = 20,
    *,
    aggregate: str = "fold_mean",
) -> tuple[Surrogate, int, float]:
    """The paper artifact's training procedure (data README, step 2, "Training rows").

    The RE's search stops after at most 20 measurements (section VI, "Candidate search"); the
    artifact (``generic_models(pipeline, 4, 20)``) fits the first k observations in file order for
    k = k_min..min(k_max, n) and keeps the k with the lowest LOOCV score (the first strict minimum).
    Returns the fit on those k observations, k, and its LOOCV score.

    The score defaults to the artifact's own (``aggregate="fold_mean"``, the mean absolute
    leave-one-out error that the artifact and model_fits.csv call "LOOCV RMSE"; see
    :func:`loocv_rmse`): only with it are the artifact's prefixes, coefficients and Table IV
    reproduced (with the pooled RMSE, q5's log model would keep k = 5 instead of 14).

    Raises ValueError if k_min is out of range or no prefix can be cross-validated.
    """
    check_family(family)
    _check_aggregate(aggregate)
    obs = list(observations_in_order)
    if k_min < 2 or k_max < k_min:
        raise ValueError(f"need 2 <= k_min <= k_max, got k_min={k_min}, k_max={k_max}")
    if len(obs) < k_min:
        raise ValueError(f"paper_prefix_fit needs at least k_min={k_min} observations, got {len(obs)}")
    best_k, best = None, math.inf
    for k in range(k_min, min(k_max, len(obs)) + 1):
        score = loocv_rmse(family, obs[:k], features, aggregate=aggregate)
        if score < best:
            best_k, best = k, score
    if best_k is None:
        raise ValueError(f"no prefix of {k_min}..{min(k_max, len(obs))} observations can be cross-validated")
    return fit(family, obs[:best_k], features), best_k, best
