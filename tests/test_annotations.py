"""Campaign phases as Grafana annotations (report/grafana/annotations.py), against a STAND-IN for Grafana.

No Grafana server can be had on these machines (PLATFORM.md). ``GrafanaStandIn`` below is a tiny
http.server that answers Grafana's annotation API (POST /api/annotations, PATCH /api/annotations/<id>)
the way Grafana documents it, and records every request (method, path, Authorization header, JSON
body) so that the tests can check what the controller sends. It is not Grafana: it checks nothing
Grafana would (permissions, the organisation, the body's types beyond JSON).

The campaigns run on the simulated testbed (``--testbed sim``): fast, and the same phases as Flink.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import subprocess
import threading
import time

import pytest

from clitools import COMMAND, cli_env, json_result, q1_plan
from streambed.report.grafana.annotations import TAG, TOKEN_VARIABLE, URL_VARIABLE, GrafanaAnnotations, GrafanaSettings, tags

TOKEN = "glsa_stand-in-token"


class GrafanaStandIn:
    """A STAND-IN for Grafana's annotation API: records requests; answers ``status`` (200: as Grafana)."""

    def __init__(self, status: int = 200):
        self.status = status
        self.requests: list[dict] = []
        self._ids = iter(range(1, 1_000_000))
        stand_in = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                stand_in.requests.append({"method": self.command, "path": self.path,
                                          "authorization": self.headers.get("Authorization"),
                                          "content_type": self.headers.get("Content-Type"),
                                          "body": json.loads(raw) if raw else None})
                if stand_in.status != 200:
                    body = {"message": "stand-in failure"}
                elif self.command == "POST" and self.path.endswith("/api/annotations"):
                    body = {"message": "Annotation added", "id": next(stand_in._ids)}
                elif self.command == "PATCH" and "/api/annotations/" in self.path:
                    body = {"message": "Annotation patched"}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(stand_in.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_PATCH = do_GET = _answer  # noqa: N815 - http.server's names

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "GrafanaStandIn":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def posts(self) -> list[dict]:
        return [r for r in self.requests if r["method"] == "POST"]

    def regions(self) -> list[dict]:
        """Each annotation as its PATCH left it: {id, time, timeEnd, tags, text}."""
        return [{"id": int(r["path"].rsplit("/", 1)[1]), **r["body"]} for r in self.requests if r["method"] == "PATCH"]


def closed_port() -> int:
    """A local port nothing listens on (connections are refused)."""
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------ the observer alone


def test_a_phase_is_posted_when_it_begins_and_becomes_a_region_when_it_ends():
    clock = iter([1_795_000_000.0, 1_795_000_042.5])
    with GrafanaStandIn() as grafana:
        settings = GrafanaSettings(grafana.url, TOKEN)
        watcher = GrafanaAnnotations(settings, campaign="estimate", query="q5", warn=pytest.fail,
                                     clock=lambda: next(clock))
        with watcher.phase("warm-up", "estimate: warm-up at 4,000,000 events/s"):
            [post] = grafana.requests
            assert post["body"]["timeEnd"] is None  # a point, at once: a run watched live shows it
    post, patch = grafana.requests
    assert (post["method"], post["path"]) == ("POST", "/api/annotations")
    assert post["authorization"] == f"Bearer {TOKEN}" and post["content_type"] == "application/json"
    assert post["body"]["time"] == 1_795_000_000_000  # ms
    assert post["body"]["tags"] == ["streambed", "campaign:estimate", "query:q5", "phase:warm-up"]
    assert post["body"]["text"] == "estimate: warm-up at 4,000,000 events/s"
    assert "dashboardUID" not in post["body"] and "dashboardId" not in post["body"]  # organisation-wide
    assert (patch["method"], patch["path"]) == ("PATCH", "/api/annotations/1")
    assert patch["authorization"] == f"Bearer {TOKEN}"
    # Grafana's PATCH replaces the tags it is given: they are sent again, whole
    assert patch["body"] == {"time": 1_795_000_000_000, "timeEnd": 1_795_000_042_500,
                             "tags": post["body"]["tags"], "text": post["body"]["text"]}


def test_a_phase_that_fails_still_ends_its_region_and_the_error_goes_on():
    with GrafanaStandIn() as grafana:
        watcher = GrafanaAnnotations(GrafanaSettings(grafana.url), campaign="validate", query="q1", warn=pytest.fail)
        with pytest.raises(RuntimeError, match="job lost"):
            with watcher.phase("validation", "validate/1x"):
                raise RuntimeError("job lost")
    assert [r["method"] for r in grafana.requests] == ["POST", "PATCH"]
    assert grafana.requests[0]["authorization"] is None  # no token configured: no Authorization header


def test_a_grafana_under_a_sub_path_gets_its_requests_there():
    with GrafanaStandIn() as grafana:
        watcher = GrafanaAnnotations(GrafanaSettings(grafana.url + "/grafana"), campaign="measure", query="q1",
                                     warn=pytest.fail)
        with watcher.phase("observation", "w0"):
            pass
    assert [r["path"] for r in grafana.requests] == ["/grafana/api/annotations", "/grafana/api/annotations/1"]


@pytest.mark.parametrize("status", [500, 401, 404])
def test_a_failing_grafana_gives_one_warning_and_no_more_requests(status):
    warnings = []
    with GrafanaStandIn(status) as grafana:
        watcher = GrafanaAnnotations(GrafanaSettings(grafana.url, TOKEN), campaign="estimate", query="q1",
                                     warn=warnings.append)
        for i in range(3):
            with watcher.phase("injection", f"w{i}"):
                pass
    assert len(grafana.requests) == 1 and not watcher.on
    [warning] = warnings
    assert grafana.url in warning and "annotations are off for this campaign" in warning
    assert TOKEN not in warning


def test_a_grafana_that_never_answers_costs_one_timeout_and_one_warning():
    warnings = []
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts connections, never answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        watcher = GrafanaAnnotations(GrafanaSettings(url, timeout_s=0.5), campaign="plan", query="q11",
                                     warn=warnings.append)
        t0 = time.monotonic()
        for _ in range(3):
            with watcher.phase("cooldown", "w"):
                pass
        spent = time.monotonic() - t0
    assert warnings == [f"Grafana at {url}: no answer within 0.5 s; annotations are off for this campaign"]
    assert spent < 2.0


def test_an_answer_that_is_not_grafanas_turns_annotations_off():
    class Api:
        class annotations:  # noqa: N801 - grafana-client's attribute
            add_annotation = staticmethod(lambda **kwargs: "<html>a proxy's login page</html>")

    warnings = []
    watcher = GrafanaAnnotations(GrafanaSettings("http://grafana:3000"), campaign="plan", query="q11",
                                 warn=warnings.append, api=Api())
    with watcher.phase("warm-up", "w"):
        pass
    [warning] = warnings
    assert "unexpected answer" in warning and not watcher.on and watcher.posted == 0


def test_credentials_in_the_url_never_show_in_the_warning():
    warnings = []
    port = closed_port()
    watcher = GrafanaAnnotations(GrafanaSettings(f"http://admin:secret@127.0.0.1:{port}"), campaign="estimate",
                                 query="q1", warn=warnings.append)
    with watcher.phase("warm-up", "w"):
        pass
    [warning] = warnings
    assert warning == f"Grafana at http://127.0.0.1:{port}: cannot connect; annotations are off for this campaign"


def test_the_url_comes_from_the_option_else_the_environment_and_there_is_no_default():
    env = {URL_VARIABLE: "http://grafana:3000", TOKEN_VARIABLE: "t"}
    assert GrafanaSettings.resolve(None, {}) is None
    assert GrafanaSettings.resolve(None, {URL_VARIABLE: ""}) is None
    assert GrafanaSettings.resolve(None, env) == GrafanaSettings("http://grafana:3000", "t")
    assert GrafanaSettings.resolve("http://other:3000", env) == GrafanaSettings("http://other:3000", "t")
    assert tags("plan", "q11", "cooldown")[0] == TAG


# ------------------------------------------------------------------- campaigns on the simulated testbed


def run_campaign(tmp_path, *args, url: str | None, token: str | None = TOKEN) -> subprocess.CompletedProcess:
    """A campaign command with annotations to ``url`` (through the environment's variables, as a user
    sets them; None: neither variable set)."""
    env = {k: v for k, v in cli_env(200).items() if k not in (URL_VARIABLE, TOKEN_VARIABLE)}
    if url:
        env[URL_VARIABLE] = url
    if token:
        env[TOKEN_VARIABLE] = token
    return subprocess.run([*COMMAND, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


ESTIMATE = ("estimate", "--query", "q1", "--testbed", "sim", "--timing", "quick", "--memory", "1024", "--json")


def test_an_estimate_posts_its_warm_up_and_every_rate_window(tmp_path):
    before = time.time() * 1000
    with GrafanaStandIn() as grafana:
        proc = run_campaign(tmp_path, *ESTIMATE, url=grafana.url)
    after = time.time() * 1000
    result = json_result(proc)
    assert "warning" not in proc.stderr
    posts, regions = grafana.posts(), grafana.regions()
    assert posts and len(regions) == len(posts), "every phase begun is ended"
    assert {r["authorization"] for r in grafana.requests} == {f"Bearer {TOKEN}"}
    phases = [next(t for t in p["body"]["tags"] if t.startswith("phase:")) for p in posts]
    assert phases[0] == "phase:warm-up"
    windows = len(result["windows"])
    # every test: a cooldown, then the injection at its rate with its observation window inside
    assert phases.count("phase:injection") == phases.count("phase:observation") == phases.count("phase:cooldown")
    assert phases.count("phase:injection") == windows
    for region in regions:
        assert set(region["tags"][:3]) == {"streambed", "campaign:estimate", "query:q1"}
        assert before - 1 <= region["time"] <= region["timeEnd"] <= after + 1, region
    injections = [r for r in regions if "phase:injection" in r["tags"]]
    rates = [w["rate"] for w in result["windows"]]
    assert [r["text"] for r in injections] == [f"estimate: injection at {rate:,.0f} events/s" for rate in rates]
    # an observation lies inside its injection
    observations = [r for r in regions if "phase:observation" in r["tags"]]
    for injection, observation in zip(injections, observations):
        assert injection["time"] <= observation["time"] <= observation["timeEnd"] <= injection["timeEnd"]


def test_a_validation_posts_each_run(tmp_path):
    (tmp_path / "plan.json").write_text(q1_plan())
    with GrafanaStandIn() as grafana:
        proc = run_campaign(tmp_path, "validate", "--query", "q1", "--plan", "plan.json", "--testbed", "sim",
                            "--ramp", "30", "--duration", "60", "--json", url=grafana.url)
    result = json_result(proc)
    runs = [r for r in grafana.regions() if "phase:validation" in r["tags"]]
    assert [r["text"] for r in runs] == [f"validate/{m:g}x: {m * 100:g} % of the rate, {5e6 * m:,.0f} events/s"
                                         for m in (1, 1.2, 1.5)]
    assert len(result["runs"]) == 3
    assert all("campaign:validate" in r["tags"] and "query:q1" in r["tags"] for r in runs)
    judged = [r for r in grafana.regions() if "phase:observation" in r["tags"]]
    assert len(judged) == 3


def test_a_measurement_posts_its_warm_up_once_and_each_rate(tmp_path):
    with GrafanaStandIn() as grafana:
        proc = run_campaign(tmp_path, "measure", "--query", "q1", "--testbed", "sim", "--rates", "1e5,2e5",
                            "--warmup", "20", "--ramp", "5", "--window", "10", "--json", url=grafana.url)
    json_result(proc)
    phases = [(next(t for t in r["tags"] if t.startswith("phase:")), r["text"]) for r in grafana.regions()]
    # regions in the order they ended: the observation inside its injection ends first
    assert [p for p, _ in phases] == ["phase:warm-up", "phase:observation", "phase:injection",
                                      "phase:observation", "phase:injection"]
    assert phases[2][1].endswith("injection at 100,000 events/s") and phases[4][1].endswith("200,000 events/s")
    assert all("campaign:measure" in r["tags"] for r in grafana.regions())


@pytest.mark.parametrize("grafana", ["500", "refused"])
def test_a_failing_or_unreachable_grafana_never_stops_a_campaign(tmp_path, grafana):
    if grafana == "500":
        with GrafanaStandIn(500) as stand_in:
            proc = run_campaign(tmp_path, *ESTIMATE, url=stand_in.url)
        assert len(stand_in.requests) == 1, "annotations are off after the first failure"
    else:
        proc = run_campaign(tmp_path, *ESTIMATE, url=f"http://127.0.0.1:{closed_port()}")
    result = json_result(proc)  # the campaign completed, its result on stdout
    assert result["mst"] > 0
    warnings = [line for line in proc.stderr.splitlines() if "warning" in line.lower()]
    assert len(warnings) == 1, proc.stderr
    assert "annotations are off for this campaign" in proc.stderr and TOKEN not in proc.stderr


def test_without_a_grafana_url_nothing_is_posted_and_nothing_said(tmp_path):
    proc = run_campaign(tmp_path, *ESTIMATE, url=None, token=None)
    json_result(proc)
    assert "grafana" not in proc.stderr.lower()


def test_the_option_wins_over_the_environment(tmp_path):
    with GrafanaStandIn() as used, GrafanaStandIn() as ignored:
        proc = run_campaign(tmp_path, *ESTIMATE, "--grafana-url", used.url, url=ignored.url)
    json_result(proc)
    assert used.requests and not ignored.requests


@pytest.mark.parametrize("url, where", [("ftp://monitoring:3000", "--grafana-url"), ("notaurl", "--grafana-url"),
                                        ("http://monitoring:port", "--grafana-url"),
                                        ("monitoring:3000", "STREAMBED_GRAFANA_URL")])
def test_a_malformed_grafana_address_is_one_line_before_the_campaign_starts(url, where):
    """Bad input, refused before anything runs (an unreachable Grafana is only a warning later)."""
    from streambed.errors import UserError

    option, environ = (url, {}) if where == "--grafana-url" else (None, {URL_VARIABLE: url})
    with pytest.raises(UserError, match=f"^{where}: expected Grafana's http"):
        GrafanaSettings.resolve(option, environ)
    assert GrafanaSettings.resolve("https://grafana.example/sub", {}).url == "https://grafana.example/sub"
