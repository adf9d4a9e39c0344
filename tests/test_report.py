"""Plan tables: an unreachable plan says why."""

from streambed.report.console import Output
from streambed.report.tables import plan_tables


class Recorder(Output):
    def __init__(self):
        super().__init__(quiet=True)
        self.warnings = []

    def warn(self, message):
        self.warnings.append(message)

    def table(self, title, columns, rows):
        pass


def plan(b):
    """A plan whose log model (b per log slot) is solved with the guard rails for 10 M events/s."""
    from streambed.planner.exploration import ExplorerSettings
    from streambed.planner.sizing import guarded_solve
    from streambed.model import Surrogate

    model = {"family": "log", "a": 0.0, "b": b, "c": 1e6,
             "features": {"memory": "slot_mb", "slots_per_taskmanager": 16, "log": "log1p"}}
    solve = guarded_solve(Surrogate.from_dict(model), 512, 1e7, min_slots=2, measured_slots=48,
                          settings=ExplorerSettings())
    return {"query": "q1", "rate": 1e7, "safety": 1.1, "family": "log", "model": model,
            "entries": [{"memory_mb": 512, "slots": solve.slots, "predicted_mst": None, "configuration": None,
                         "by_family": {}, "max_slots": solve.max_slots, "max_rate": solve.max_rate,
                         "unreachable": solve.unreachable}]}


def test_an_unreachable_plan_whose_model_grows_too_slowly_says_what_it_supports():
    out = Recorder()
    plan_tables(out, plan(b=1e4))
    [warning] = out.warnings
    assert warning.startswith("512 MB per slot: unreachable within 19") and "gains less than 25 %" in warning
    # 1e6 + 1e4 ln(1 + 196) over the 1.1 safety factor
    assert "the most this plan supports is 957,120 events/s" in warning and "measure larger budgets" in warning


def test_an_unreachable_plan_whose_model_does_not_grow_says_so():
    out = Recorder()
    plan_tables(out, plan(b=-5.0))
    [warning] = out.warnings
    assert "does not grow with slots" in warning


def test_the_key_skew_table_says_when_the_inferred_key_was_held_to_the_datas_heaviest():
    class Tables(Recorder):
        def __init__(self):
            super().__init__()
            self.tables = {}

        def table(self, title, columns, rows):
            self.tables[title.split(":")[0]] = (list(columns), [list(r) for r in rows])

    p = plan(b=1e4)
    shown = {"source": "tasks", "inferred": {"concentration": 0.055, "hottest": 0.20},
             "data": {"concentration": 0.038, "hottest": 0.073}, "busiest_inferred": 0.11, "busiest_data": 0.078,
             "compared_at": 180}
    out = Tables()
    plan_tables(out, {**p, "key_skew": {"Join#4": {**shown, "inferred_hottest_held_to": 0.073}, "Agg#2": shown}})
    columns, rows = out.tables["Key skew per keyed operator"]
    cell = {r[0]: r[columns.index("hottest key, inferred")] for r in rows}
    assert cell["Join#4"] == "20.00 % (held to 7.30 %: keys sharing a task)" and cell["Agg#2"] == "20.00 %"


def test_the_key_skew_table_says_which_skew_was_used_and_why():
    from streambed.report.tables import skew_used

    groups = {"concentration": 1e-3, "hottest": 1e-3, "key_groups_counted": 32768}
    no_groups = {"concentration": 1e-3, "hottest": 1e-3}
    assert skew_used({"source": "data", "data": groups, "counted": True}) == "data (key groups)"
    assert skew_used({"source": "data", "data": no_groups, "counted": False}) == "data (more pessimistic)"
    # a run's tasks took what the data's groups do not give them (the replay's hot keys move: docs/data.md)
    assert skew_used({"source": "tasks", "data": groups, "counted": False}) == \
        "tasks (a run contradicts the data)"
    assert skew_used({"source": "tasks", "data": no_groups, "counted": False}) == "tasks (more pessimistic)"
    assert skew_used({"source": "tasks", "inferred": {"concentration": 0.02}}) == "tasks"


# ---------------------------------------------------------------------------------------------- the report page
# Campaign directories of fast sim campaigns (quick timing, few measurements), made once for the module.

import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
from html.parser import HTMLParser  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

from clitools import error_line, json_result, streambed  # noqa: E402
from streambed.report import html as report_html, plots  # noqa: E402

QUERY = "paper-q11-linear"
CAMPAIGNS = {
    "plan": ["plan", "--query", QUERY, "--rate", "2e7", "--profiles", "512,4096", "--timing", "quick",
             "--max-measurements", "8"],
    "explore": ["explore", "--query", "q11", "--max-measurements", "5", "--timing", "quick"],
    "estimate": ["estimate", "--query", "q1", "--config", "Calc#1=1,Sink#2=1", "--timing", "quick"],
    "validate": ["validate", "--query", QUERY, "--plan", "plan/plan.json", "--memory", "4096", "--ramp", "30",
                 "--duration", "120", "--window", "20", "--production-slots", "2000"],
}
SECTION_IDS = ("plan", "model", "trace", "busyness", "validation")
SHOWN = {"plan": {"plan", "model", "trace", "busyness"}, "explore": {"model", "trace", "busyness"},
         "estimate": {"trace", "busyness"}, "validate": {"plan", "busyness", "validation"}}


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory) -> tuple[Path, dict]:
    """The four kinds of campaign directory; plan and validate wrote their page, explore and estimate
    get theirs from streambed report (validate's again with --plan, as the campaign did)."""
    root = tmp_path_factory.mktemp("campaigns")
    results = {kind: json_result(streambed(*argv, "--campaign-dir", kind, "--json", cwd=root, timeout=120))
               for kind, argv in CAMPAIGNS.items()}
    for kind in ("explore", "estimate"):
        d = json_result(streambed("report", "--campaign-dir", kind, "--json", cwd=root))
        assert d == {"report": str(Path(kind) / "report.html")}
    return root, results


class Page(HTMLParser):
    """What a test reads of a page: its sections (id -> heading, text, number of inline SVGs) and
    every URL-carrying attribute."""

    def __init__(self, text: str):
        super().__init__()
        self.sections: dict[str, dict] = {}
        self.urls: list[tuple[str, str, str]] = []
        self._section = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "data", "action", "poster") or (name == "style" and "url(" in (value or "")):
                self.urls.append((tag, name, value or ""))
        if tag == "section":
            self._section = dict(attrs)["id"]
            self.sections[self._section] = {"text": "", "svgs": 0}
        elif tag == "svg" and self._section:
            self.sections[self._section]["svgs"] += 1

    def handle_endtag(self, tag):
        if tag == "section":
            self._section = None

    def handle_data(self, data):
        if self._section:
            self.sections[self._section]["text"] += data


def page_of(root: Path, kind: str) -> tuple[str, Page]:
    text = (root / kind / "report.html").read_text(encoding="utf-8")
    return text, Page(text)


@pytest.mark.parametrize("kind", list(CAMPAIGNS))
def test_the_page_shows_the_sections_the_campaign_has_data_for_and_names_the_absent_ones(campaigns, kind):
    root, _ = campaigns
    text, page = page_of(root, kind)
    assert list(page.sections) == list(SECTION_IDS)
    for key, s in page.sections.items():
        if key in SHOWN[kind]:
            assert "Absent:" not in s["text"] and "could not be drawn" not in s["text"], (key, s["text"][:300])
            assert s["svgs"] >= (0 if key == "plan" else 1), key  # every section but the plan's is a plot
        else:
            assert "Absent:" in s["text"] and s["svgs"] == 0, key
    head = text[:text.index("<section")]
    absent = [key for key in SECTION_IDS if key not in SHOWN[kind]]
    assert ("Absent from this campaign" in head) == bool(absent)


def test_the_page_is_self_contained(campaigns):
    """No script, nothing fetched: every URL on the page points inside it."""
    root, _ = campaigns
    for kind in CAMPAIGNS:
        text, page = page_of(root, kind)
        assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", text, re.I), kind
        assert "<script" not in text and "<img" not in text and "<link" not in text and "@import" not in text
        # an id of the page, or an image inlined as data (the heat map's pixels in its SVG)
        assert page.urls and all(v.startswith(("#", "data:image/png;base64,")) for _, _, v in page.urls), kind
        ids = set(re.findall(r'\bid="([^"]+)"', text))
        assert {v[1:] for _, _, v in page.urls if v.startswith("#")} <= ids, kind  # every reference resolves
        assert len(re.findall(r'\bid="([^"]+)"', text)) == len(ids), kind  # no id twice (several inline SVGs)


def test_the_plan_page_tells_the_plan_its_risk_and_the_validate_page_its_verdict(campaigns):
    root, results = campaigns
    plan = results["plan"]["plan"]
    assert results["plan"]["files"]["report"] == str(Path("plan") / "report.html")
    _, page = page_of(root, "plan")
    text = page.sections["plan"]["text"]
    assert f"{plan['rate']:,.0f} events/s" in text and "x1.10 safety factor" in text and plan["family"] in text
    for e in plan["entries"]:
        assert f"{e['memory_mb']} MB per slot" in text and f"{e['slots']:,} task slots" in text
        for op, n in e["configuration"].items():
            assert op in text
    assert "Per-operator parallelism" in text
    # the risk: the terminal's warnings, or the plain statement that there is none
    assert ("warning:" in text) or ("carries no warning" in text)
    _, page = page_of(root, "validate")
    v = results["validate"]
    assert results["validate"]["files"]["report"] == str(Path("validate") / "report.html")
    assert f"Verdict: {v['verdict']}" in " ".join(page.sections["validation"]["text"].split())
    for r in v["runs"]:
        assert r["verdict"] in page.sections["validation"]["text"]


class Figures:
    """The figures a page is drawn from (plots.svg intercepted), by section key."""

    def __init__(self, monkeypatch):
        self.by_key: dict = {}
        svg = plots.svg

        def capture(fig, prefix=""):
            self.by_key[prefix.rstrip("-")] = fig
            FigureCanvasAgg(fig).draw()  # tick labels and offsets exist once drawn
            return svg(fig, prefix)

        monkeypatch.setattr(plots, "svg", capture)


def test_the_trace_counts_seconds_from_its_first_window_not_the_epoch(campaigns, monkeypatch):
    """A wall-clock testbed (Flink) records window times since 1970: the axis still starts near 0 s,
    with no offset, and the legend says what target, achieved and each colour mean."""
    root, _ = campaigns
    campaign = report_html.load(root / "estimate")
    for w in campaign.estimate["windows"]:
        w["measurement"]["start"] += 1.795e9
        w["measurement"]["end"] += 1.795e9
    figures = Figures(monkeypatch)
    report_html.render(campaign)
    ax = figures.by_key["trace"].axes[0]
    lo, hi = ax.get_xlim()
    assert -0.1 * (hi - lo) <= lo <= 0.0 and hi < 1000
    assert ax.xaxis.get_offset_text().get_text() == ""
    ticks = [float(t.get_text().replace("\u2212", "-")) for t in ax.get_xticklabels() if t.get_text()]
    assert ticks and min(ticks) <= 0.0 and max(ticks) < 1000
    segments = [seg for c in ax.collections if hasattr(c, "get_segments") for seg in c.get_segments()]
    starts = sorted(seg[0][0] for seg in segments)
    assert starts[0] == pytest.approx(0.0, abs=1e-6)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"target rate (injected)", "sustained", "not sustained"} <= set(labels)
    assert any(label.startswith("achieved rate") for label in labels)
    assert any(label.startswith("search bounds") for label in labels)


def test_a_source_capped_window_has_its_own_colour_and_legend_entry():
    window = {"rate": 2e6, "min_rate": 1e6, "max_rate": 2e6, "success": False,
              "measurement": {"start": 10.0, "end": 16.0, "achieved_rate": 1.5e6, "source_saturated": True}}
    ok = dict(window, rate=1e6, success=True, max_rate=None,
              measurement={"start": 0.0, "end": 6.0, "achieved_rate": 1e6})
    assert plots.window_outcome(window) == "source-capped" and plots.window_outcome(ok) == "sustained"
    ax = plots.trace_figure({"mst": 1e6, "windows": [ok, window]}, "t").axes[0]
    handles = {t.get_label(): t for t in ax.get_legend().legend_handles}
    assert handles["source-capped"].get_color() == plots.OUTCOME["source-capped"]
    assert "not sustained" not in handles


def test_the_model_shows_the_testbed_range_beside_the_extrapolation(campaigns, monkeypatch):
    """Left: the measurements fill the testbed's panel; right: the extrapolation to the planned slots,
    with the target rate and each planned budget marked."""
    root, results = campaigns
    plan, points = results["plan"]["plan"], results["plan"]["exploration"]["points"]
    figures = Figures(monkeypatch)
    report_html.render(report_html.load(root / "plan"))
    testbed, extrapolated = figures.by_key["model"].axes[:2]
    lo, hi = testbed.get_xlim()
    measured = np.concatenate([c.get_offsets()[:, 0] for c in testbed.collections])
    assert len(measured) == len(points) and hi <= 48 * 1.1
    assert (measured.max() - measured.min()) / (hi - lo) > 0.5  # not squeezed into a corner
    assert extrapolated.get_xlim()[1] >= max(e["slots"] for e in plan["entries"])
    horizontal = {round(line.get_ydata()[0]) for line in extrapolated.lines if len(set(line.get_ydata())) == 1}
    vertical = {round(line.get_xdata()[0]) for line in extrapolated.lines if len(set(line.get_xdata())) == 1}
    assert round(plan["rate"]) in horizontal and round(plan["rate"] * plan["safety"]) in horizontal
    assert {e["slots"] for e in plan["entries"]} <= vertical
    labels = [t.get_text() for t in extrapolated.get_legend().get_texts()]
    assert any(label.startswith("target rate") for label in labels)
    assert any(label.startswith("testbed range") for label in labels)
    assert sum(label.startswith("planned: ") for label in labels) == len(plan["entries"])


def test_the_validation_runs_plot_rate_and_pending_records_per_run(campaigns, monkeypatch):
    root, results = campaigns
    figures = Figures(monkeypatch)
    report_html.render(report_html.load(root / "validate", plan=results["plan"]["plan"]))
    rate, pending = figures.by_key["validation"].axes
    runs = results["validate"]["runs"]
    labels = [t.get_text() for t in rate.get_legend().get_texts()]
    assert labels[1:] == [f"{r['multiplier'] * 100:.0f} %: {r['verdict']}" for r in runs]
    curves = [line for line in pending.lines if len(line.get_xdata()) > 1]
    assert len(curves) == len(runs)
    for line, r in zip(curves, runs):
        assert line.get_xdata()[0] == 0.0 and line.get_ydata()[0] == 0.0
        assert line.get_ydata()[-1] == pytest.approx(r["windows"][-1]["pending_end"] - r["windows"][0]["pending_start"])


def test_an_interrupted_campaign_s_page_says_it_has_no_result_yet(tmp_path):
    from streambed.ledger import Ledger

    Ledger.open(tmp_path / "p", "plan", {"query": "q1", "testbed": "sim", "seed": 0}, resume=False).close()
    page = Page(report_html.render(report_html.load(tmp_path / "p")))
    for key in ("plan", "model", "trace", "busyness"):
        assert "no result yet (interrupted?)" in page.sections[key]["text"] and "--resume" in page.sections[key]["text"]
    assert "runs no validation" in page.sections["validation"]["text"]


def test_report_out_writes_the_page_elsewhere(campaigns, tmp_path):
    root, _ = campaigns
    out = tmp_path / "elsewhere.html"
    d = json_result(streambed("report", "--campaign-dir", str(root / "estimate"), "--out", str(out), "--json",
                              cwd=tmp_path))
    assert d == {"report": str(out)} and out.read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("argv, fragments", [
    (["report", "--campaign-dir", "nowhere"], ["--campaign-dir", "nowhere", "no such directory"]),
    (["report", "--campaign-dir", "empty"], ["--campaign-dir", "empty", "not a campaign directory"]),
    (["report", "--campaign-dir", "a-file"], ["--campaign-dir", "a-file", "is a file"]),
    (["report", "--campaign-dir", "stranger"], ["--campaign-dir", "not a StreamBed ledger"]),
    (["report"], ["--campaign-dir"]),
], ids=["missing", "not-a-campaign", "a-file", "not-a-ledger", "no-dir"])
def test_bad_input_is_one_line_exit_2(tmp_path, argv, fragments):
    (tmp_path / "empty").mkdir()
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "stranger").mkdir()
    (tmp_path / "stranger" / "ledger.sqlite").write_text("not sqlite at all")
    line = error_line(streambed(*argv, cwd=tmp_path))
    for f in fragments:
        assert f in line, line


def test_an_unwritable_out_is_one_line_exit_2(campaigns, tmp_path):
    root, _ = campaigns
    line = error_line(streambed("report", "--campaign-dir", str(root / "estimate"), "--out",
                                str(tmp_path / "no" / "such" / "dir" / "r.html"), cwd=tmp_path))
    assert "--out" in line


# ---------------------------------------------------------------------------------------------- in a browser

CHROMIUM = shutil.which("chromium")
NEEDS_CHROMIUM = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make chromium)")


def browse(page: Path, shot: Path, profile: Path, height: int = 4000) -> list[str]:
    """Load ``page`` in headless Chromium, screenshot it (1280 x ``height``) and return the messages its
    console received (Chromium logs each, whatever its level, as a CONSOLE line on stderr)."""
    proc = subprocess.run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr", "--v=0",
                           f"--user-data-dir={profile}", "--no-first-run", "--disable-extensions",
                           f"--screenshot={shot}", f"--window-size=1280,{height}", page.resolve().as_uri()],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": str(profile)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]


def colour_pixels(image, rgb: str, tolerance: int = 24) -> int:
    """How many pixels of ``image`` are within ``tolerance`` of the colour ``#rrggbb`` on every channel."""
    target = np.array([int(rgb[i:i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(np.asarray(image.convert("RGB"), dtype=int) - target) <= tolerance).all(axis=2).sum())


@NEEDS_CHROMIUM
def test_the_console_check_sees_an_error(tmp_path):
    """The check below would see a broken page: a script error and an SVG the browser rejects."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><svg width="9" height="9"><path d="M 0 0 L x"/></svg>'
                   "<script>notDefined();</script></body></html>")
    messages = browse(bad, tmp_path / "bad.png", tmp_path / "profile", height=300)
    assert any("notDefined is not defined" in m for m in messages), messages
    assert any("attribute d" in m for m in messages), messages


@NEEDS_CHROMIUM
@pytest.mark.parametrize("kind, colours", [
    # model: one colour per memory; trace: green sustained, red not sustained
    ("plan", {"512 MB model": "#1f77b4", "4096 MB model": "#ff7f0e", "sustained": "#2ca02c",
              "not sustained": "#d62728"}),
    # validation runs: 100 % blue, 120 % yellow, 150 % purple
    ("validate", {"100 %": "#1f77b4", "120 %": "#e0b000", "150 %": "#9467bd"}),
])
def test_the_page_loads_in_chromium_without_console_errors_and_shows_its_plots(campaigns, tmp_path, kind, colours):
    from PIL import Image

    root, _ = campaigns
    shot = tmp_path / f"{kind}.png"
    assert browse(root / kind / "report.html", shot, tmp_path / "profile") == []
    with Image.open(shot) as image:
        assert image.format == "PNG" and image.size == (1280, 4000)
        pixels = np.asarray(image.convert("RGB"), dtype=int)
        ink = (pixels < 235).any(axis=2)
        # the page's text, tables and plots cover a good part of it, and the plots draw in colour
        assert ink.mean() > 0.03
        for what, rgb in colours.items():
            assert colour_pixels(image, rgb) > 50, f"{what} ({rgb}) barely on the screenshot"
        # a heat map (busyness) is there too: many shades of its orange-red scale
        reds = pixels[(pixels[:, :, 0] > 180) & (pixels[:, :, 2] < 120)]
        assert len({tuple(p) for p in reds}) > 20


def test_a_plan_that_is_a_checkpoints_measurement_says_so():
    from streambed.model import PlanEntry
    from streambed.planner.checkpoints import held_at_checkpoint
    from streambed.planner.exploration import CHECKPOINT, ExplorationPoint

    class Infos(Recorder):
        def __init__(self):
            super().__init__()
            self.infos = []

        def info(self, message):
            self.infos.append(message)

    p = plan(b=1e4)
    e = p["entries"][0]
    unreachable = PlanEntry(512, None, None, None, None, {}, max_slots=e["max_slots"], unreachable=e["unreachable"])
    staged = ExplorationPoint(512, 400, 1.2e7, {"Calc#1": 400}, 1.3e7, 0.0, 900.0, CHECKPOINT)
    held = {**p, "entries": [held_at_checkpoint(unreachable, [staged], 1e7, 1.1).to_dict()]}
    exploration = {"points": [{**staged.to_dict(), "phase": CHECKPOINT}], "optimizer_calls": 1, "estimator_calls": 1,
                   "testbed_seconds": 900.0, "stop_reason": "-", "loocv_rmse": {}}
    out = Infos()
    plan_tables(out, held, exploration)
    assert out.warnings == []  # no longer "unreachable"
    [line] = [m for m in out.infos if m.startswith("512 MB per slot")]
    assert "measured at a checkpoint: 400 slots at 12,000,000 events/s, 1.20 x the rate" in line
    assert "the model alone: unreachable within 19" in line
    [staged_line] = [m for m in out.infos if m.startswith("checkpoint (--checkpoint-slots)")]
    assert staged_line.endswith("the 512 MB plan is this budget, as measured")
    out = Infos()
    plan_tables(out, p)
    assert not any(m.startswith("512 MB per slot") for m in out.infos)
