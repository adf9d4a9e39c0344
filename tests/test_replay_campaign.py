"""A campaign's --input: the data set replayed, its bound, the refusal before anything runs, and what
the Flink testbed asks of the job (no cluster: the REST calls are captured)."""

import json
from pathlib import Path

import pytest

from streambed import dataset as ds
from streambed.campaigns.base import replay_of
from streambed.campaigns.settings import CampaignSettings
from streambed.cli import main
from streambed.errors import UserError
from streambed.planner.estimator import TIMINGS
from streambed.model import Budget, Configuration, Query


def lake_with(tmp_path: Path, events: int) -> Path:
    d = tmp_path / "lake" / "d"
    (d / "json").mkdir(parents=True)
    (d / "json" / "part-00000.json").write_text("{}\n")
    (d / ds.MANIFEST).write_text(json.dumps({"version": 1, "name": "d", "events": events,
                                             "kinds": {"person": 0, "auction": 0, "bid": events},
                                             "formats": {"json": {"files": 1, "bytes": 3}}, "origin": {}}))
    return tmp_path / "lake"


def test_without_a_bound_the_replay_runs_as_fast_as_the_data_set_lasts_one_job(tmp_path):
    quick = TIMINGS["quick"]
    c = CampaignSettings("q1", input="d", lake=lake_with(tmp_path, 10_000_000))
    r = replay_of(c, quick)
    full, cool = ds.job_seconds(quick)
    assert r.max_rate == pytest.approx((10_000_000 - quick.cooldown_rate_per_source * cool) / full)
    assert ds.sizing(r.max_rate, quick).job_events <= 10_000_000 + 1


def test_a_bound_the_data_set_cannot_hold_is_refused_before_anything_runs(tmp_path):
    c = CampaignSettings("q1", input="d", lake=lake_with(tmp_path, 1_000_000), input_rate=50_000,
                         directory=tmp_path / "campaign")
    with pytest.raises(UserError, match=r"--input d: a job of this campaign may replay up to [\d,]+ events .* "
                                        r"holds 1,000,000"):
        replay_of(c, TIMINGS["quick"])
    assert replay_of(CampaignSettings("q1", input="d", lake=c.lake, input_rate=1_000), TIMINGS["quick"]).max_rate \
        == 1_000


def test_the_sim_replays_nothing_and_says_so(tmp_path, capsys):
    lake = lake_with(tmp_path, 10_000_000)
    code = main(["estimate", "--testbed", "sim", "--query", "q1", "--input", "d", "--lake", str(lake),
                 "--timing", "quick", "--campaign-dir", str(tmp_path / "c")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == ["streambed: error: --input d: the simulated testbed models a query profile and "
                                 "replays no data; replay on --testbed flink"]
    assert not (tmp_path / "c").exists()


def test_a_missing_data_set_is_one_line_naming_the_lake(tmp_path, capsys):
    lake = lake_with(tmp_path, 100)
    code = main(["plan", "--testbed", "sim", "--query", "q1", "--input", "other", "--lake", str(lake)])
    assert code == 2
    assert capsys.readouterr().err.strip() == (f"streambed: error: --input: {lake / 'other'} is not a data set: no "
                                               f"dataset.json (data sets in {lake}: d)")


class Captured:
    def __init__(self):
        self.posts = []

    def __call__(self, method, path, timeout=None, **kw):
        self.posts.append((method, path, kw.get("json")))

        class R:
            status_code = 200

            @staticmethod
            def json():
                return {"jobid": "job-1"}
        return R()


def stub_testbed(tmp_path, replay_dir):
    from streambed.testbed.flink import FlinkSettings, FlinkTestbed

    s = FlinkSettings(rest_url="http://127.0.0.1:1", prometheus_url="http://127.0.0.1:1", flink_home=tmp_path,
                      jar=tmp_path / "job.jar", queries_dir=tmp_path, state_dir=tmp_path, max_source_rate=5_000,
                      replay_dir=replay_dir)
    tb = FlinkTestbed(s)
    q = Query("q1", ("Calc#1", "Sink#2"), (("source", "Calc#1"), ("Calc#1", "Sink#2")))
    tb._queries["q1"] = (q, "INSERT INTO s SELECT * FROM bid")
    tb._jar_id = "jar"
    tb._rest = Captured()
    tb._wait_running = lambda run: None
    tb._budget = Budget(2, 1024)
    return tb, q


@pytest.mark.parametrize("replay", [True, False])
def test_the_flink_job_replays_the_data_set_and_is_never_asked_beyond_its_bound(tmp_path, replay):
    tb, q = stub_testbed(tmp_path, tmp_path / "lake" / "d" / "json" if replay else None)
    run = tb.start("q1", Configuration.single_task(q), 8_000)
    args = tb._rest.posts[0][2]["programArgsList"]
    rate_file = Path(args[args.index("--rate-file") + 1])
    assert ("--replay-dir" in args) is replay
    if replay:
        assert args[args.index("--replay-dir") + 1] == str(tmp_path / "lake" / "d" / "json")
    assert float(rate_file.read_text()) == (5_000 if replay else 8_000)
    tb.set_rate(run, 3_000)
    assert float(rate_file.read_text()) == 3_000
    tb.set_rate(run, 9_000)
    assert float(rate_file.read_text()) == (5_000 if replay else 9_000)
    state = tb._state(run)
    assert (state["asked"] > state["rate"]) is replay


@pytest.mark.parametrize("replay, remedy", [(False, "give the source more parallelism"),
                                            (True, "replay a larger data set (make datagen EVENTS=...)")])
def test_a_source_capped_estimate_names_the_remedy_of_its_input(replay, remedy, capsys):
    """A replay capped by its data set's bound is fixed with more data, not with more source tasks."""
    from streambed.report.console import Output
    from streambed.report.tables import estimate_table

    estimate = {"mst": 1619.0, "source_limited": True, "windows": [], "measurement": None}
    estimate_table(Output(), estimate, "q5", replay=replay)
    err = " ".join(capsys.readouterr().err.split())  # the console wraps long lines
    assert "1,619 events/s is a lower bound" in err and remedy in err
    assert ("make datagen" in err) == replay
