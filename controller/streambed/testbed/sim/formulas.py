"""The simulated testbed's laws as small pure functions (each has its own tests).

They work on floats and on numpy arrays alike.
"""

from __future__ import annotations

import math

import numpy as np


def state_memory_mb(memory_per_slot_mb: float, state_fraction: float) -> float:
    """Memory a task can use as state cache: Flink gives RocksDB the slot's managed memory."""
    return memory_per_slot_mb * state_fraction


def state_fill(elapsed_s, warmup_s: float):
    """Fraction of its steady-state size a task's state has reached after ``elapsed_s`` of running.

    Paper section IV: stateful operators start empty and grow to a steady state over minutes."""
    return 1.0 - np.exp(-np.asarray(elapsed_s, dtype=float) / warmup_s)


def warmup_speed(fill, speedup: float):
    """Speed multiplier of a task whose state is ``fill`` full: ``speedup`` when empty, 1 when full."""
    return 1.0 + (speedup - 1.0) * (1.0 - np.asarray(fill, dtype=float))


def working_set_mb(base_mb: float, bytes_per_record: float, records_per_s, retention_s: float, fill=1.0):
    """State a task touches: a fixed part plus what it retains of its own stream (records/s x
    retention). A task that processes more per second needs more memory."""
    rate = np.asarray(records_per_s, dtype=float)
    return (base_mb + bytes_per_record * rate * retention_s / 1e6) * np.asarray(fill, dtype=float)


def miss_ratio(available_mb: float, working_mb):
    """Share of state accesses that miss the cache: 0 when the working set fits."""
    ws = np.asarray(working_mb, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(ws > 0, 1.0 - available_mb / np.where(ws > 0, ws, 1.0), 0.0)
    # np.clip(r, 0, 1) to the sign of a zero, without its Python-level overhead (the engine calls this often)
    return np.minimum(np.maximum(0.0, r), 1.0)


def cache_hit_rate(available_mb, working_mb):
    """Share of state accesses served from memory: the share of the working set that fits the task's
    state memory (1 when it all fits). The sim's stand-in for RocksDB's block-cache hits over hits
    plus misses."""
    return 1.0 - miss_ratio(available_mb, working_mb)


def state_access_latency_ms(miss, penalty, exponent, base_rate):
    """Time a record spends on state reads that miss the cache, ms (one state access per record):
    the per-record cost the memory law adds, penalty x miss ** exponent, in units of the task's
    unslowed per-record time 1 / base_rate. 0 when the state fits."""
    base = np.asarray(base_rate, dtype=float)
    extra = np.asarray(penalty, dtype=float) * np.asarray(miss, dtype=float) ** np.asarray(exponent, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(base > 0, 1000.0 * extra / np.where(base > 0, base, 1.0), 0.0)


def memory_slowdown(miss, penalty: float, exponent: float):
    """Cost multiplier per record: 1 + penalty x miss ** exponent (a miss costs a disk read)."""
    return 1.0 + penalty * np.asarray(miss, dtype=float) ** exponent


def sustainable_task_rate(base_rate: float, available_mb: float, base_mb: float, bytes_per_record: float,
                          retention_s: float, penalty: float, exponent: float, iterations: int = 80) -> float:
    """Largest input rate x a task can sustain when its working set grows with x:
    x = base_rate / slowdown(working_set(x)). The right side decreases in x, so bisection converges."""
    def speed(x: float) -> float:
        ws = working_set_mb(base_mb, bytes_per_record, x, retention_s)
        return base_rate / float(memory_slowdown(miss_ratio(available_mb, ws), penalty, exponent))

    lo, hi = 0.0, base_rate
    if speed(hi) >= hi:
        return base_rate
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if speed(mid) >= mid:
            lo = mid
        else:
            hi = mid
    return lo


def straggler_stretch(u, mean: float, tail: float, cap: float = 20.0):
    """Stretch xi >= 0 of a firing for uniform quantile(s) ``u``: mean ``mean``, Pareto tail of index
    ``tail``, at most ``cap`` x mean.

    A Pareto(tail) variable has E[max of p draws] ~ p ** (1 / tail): the slowest of many tasks is
    much slower than the typical one, which is how stragglers hurt large jobs more."""
    u = np.asarray(u, dtype=float)
    if mean <= 0:
        return np.zeros_like(u)
    if math.isinf(tail):
        return np.full_like(u, mean)
    # (U^(-1/a) - 1) has mean 1/(a-1) for a > 1; scale to the requested mean.
    x = (np.maximum(u, 1e-300) ** (-1.0 / tail) - 1.0) * (tail - 1.0) * mean
    return np.minimum(x, cap * mean)


def straggler_draws(rng: np.random.Generator, size: int, mean: float, tail: float, cap: float = 20.0) -> np.ndarray:
    """Independent straggler stretches (see :func:`straggler_stretch`)."""
    return straggler_stretch(rng.random(size), mean, tail, cap)


GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def golden_quantiles(start, firing: int):
    """Quantile of each task at its ``firing``-th firing: a golden-ratio sequence from a random start.
    Each task sees every quantile at its exact long-run frequency (error ~1/n, not 1/sqrt(n)), so a
    finite observation estimates straggler losses with little variance."""
    return np.mod(np.asarray(start, dtype=float) + firing * GOLDEN, 1.0)


def slowest_stretch(u, count: int, mean: float, tail: float, cap: float = 20.0):
    """Largest stretch among ``count`` independent tasks, at quantile(s) ``u`` of its distribution.

    The smallest of ``count`` uniforms has quantile 1 - (1 - u) ** (1 / count), and the stretch
    decreases in its uniform, so this is exact; with fixed ``u`` it is monotone in ``count``."""
    u = np.asarray(u, dtype=float)
    return straggler_stretch(1.0 - (1.0 - u) ** (1.0 / count), mean, tail, cap)


def ar1_coefficient(dt: float, correlation_s: float) -> float:
    """Per-step autocorrelation of noise with correlation time ``correlation_s``."""
    return math.exp(-dt / correlation_s)
