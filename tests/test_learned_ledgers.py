"""The learned cost models' second source of training data: recorded campaigns, read through the Spark
analytics tables (bench/methods_learned.py:ledger_records) from a small real campaign on the sim."""

from __future__ import annotations

import json
import sqlite3

import pytest

pytest.importorskip("pyspark")

from methods_learned import ledger_records  # noqa: E402
from streambed.cli import main  # noqa: E402
from streambed.planner.learned import TrainingSet, fit  # noqa: E402
from streambed_spark import analytics  # noqa: E402


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """An optimize campaign on the sim (the single-task run, then a 4-slot configuration), its result."""
    d = tmp_path_factory.mktemp("learned-campaign") / "optimize-q1"
    assert main(["optimize", "--query", "q1", "--slots", "4", "--memory", "1024", "--timing", "quick",
                 "--testbed", "sim", "--campaign-dir", str(d), "--quiet"]) == 0
    with sqlite3.connect(d / "ledger.sqlite") as conn:
        result = json.loads(conn.execute("SELECT data FROM result").fetchone()[0])
    return d, result


def test_measured_runs_become_labelled_plans(recorded, spark, tmp_path):
    campaign, result = recorded
    out = tmp_path / "analytics"
    analytics.run(spark, analytics.read_ledgers([campaign]),
                  analytics.AnalyticsSettings(campaign_dirs=(campaign,), out=out))
    records = ledger_records(out, spark)
    by_config = {tuple(sorted(r.configuration.items())): r for r in records}
    assert len(records) == 2  # the single-task run and the optimizer's configuration
    run = by_config[tuple(sorted(result["configuration"].items()))]
    assert run.source == "ledger" and run.label == "measured" and run.memory_mb == 1024
    assert run.mst == pytest.approx(result["mst"], rel=1e-9)
    assert run.query.name == "q1" and run.workload == str(campaign.resolve())
    # the features' rates are the single-task run's, read from its window at the MST as the optimizer reads them
    want = {o["name"]: o for o in result["single_task_metrics"]["operators"]}
    for name, rates in run.metrics.operators:
        assert rates.true_rate == pytest.approx(want[name]["true_rate_per_task"], rel=1e-6)
        assert rates.input_ratio == pytest.approx(want[name]["input_ratio"], rel=1e-6)
    # they train a model and round-trip through the cache
    TrainingSet(records, {"analytics": str(out)}).save(tmp_path / "cache")
    back = TrainingSet.load(tmp_path / "cache")
    assert fit(back.records, "linear").records == 2


def test_runs_of_unknown_queries_are_left_out(recorded, spark, tmp_path):
    campaign, _ = recorded
    out = tmp_path / "analytics"
    analytics.run(spark, analytics.read_ledgers([campaign]),
                  analytics.AnalyticsSettings(campaign_dirs=(campaign,), out=out))
    assert ledger_records(out, spark, resolve=lambda name: None) == []
