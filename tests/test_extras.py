"""Dependencies by need: the core (pyproject.toml's dependencies) plans on the simulated testbed and
re-plans from records without any optional part, and a command whose part is missing says which
extra to install in one line; requirements.lock pins what pyproject.toml pins.

The core's independence is checked in a subprocess of the full venv in which every module that only
the extras bring (the closure of their distributions minus the core's) is refused on import, so a
module of the core that imports one of them at the top fails here as it would in a core install.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from conftest import PAPER_DATA, REPO
from streambed.errors import UserError
from streambed.extras import EXTRA_OF_MODULE, extra_for, install_hint, missing_extra

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
EXTRAS = PYPROJECT["optional-dependencies"]
PARTS = ("flink", "infra", "spark", "kafka")
"""The optional parts; ``all`` is their union, ``test`` the test suite's own packages."""

ALSO_REFUSED = {"pyflink"}
"""PyFlink's package (apache-flink) is installed by make install without its dependencies, outside
every extra."""


def project_requirements(extra: str | None) -> list[Requirement]:
    """pyproject.toml's requirements of the core (None) or of one extra, self-references expanded."""
    found = []
    for line in PYPROJECT["dependencies"] if extra is None else EXTRAS[extra]:
        req = Requirement(line)
        if canonicalize_name(req.name) == "streambed":
            found += [r for part in sorted(req.extras) for r in project_requirements(part)]
        else:
            found.append(req)
    return found


def closure(requirements: list[Requirement]) -> set[str]:
    """The installed distributions ``requirements`` pull in, transitively (canonical names)."""
    seen: set[str] = set()
    todo = list(requirements)
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen or (req.marker and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        try:
            declared = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for line in declared:
            dep = Requirement(line)
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in ("", *req.extras)):
                todo.append(Requirement(str(dep).split(";")[0]))
    return seen


@functools.cache
def optional_modules() -> frozenset[str]:
    """Top-level modules that only the extras' distributions provide."""
    core = closure(project_requirements(None))
    optional = closure([r for part in PARTS for r in project_requirements(part)]) - core
    modules = set(ALSO_REFUSED)
    for module, dists in metadata.packages_distributions().items():
        names = {canonicalize_name(d) for d in dists}
        if names & optional and not names & core:
            modules.add(module)
    return frozenset(modules)


REFUSING_RUNNER = r"""
import importlib.abc, json, sys
refused = set(json.loads(sys.argv[1]))

class Refuse(importlib.abc.MetaPathFinder):
    # What an install of the core alone does not have: importing it fails as it would there.
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in refused:
            raise ModuleNotFoundError(f"No module named {name!r} (refused: not in the core)", name=name)
        return None

sys.meta_path.insert(0, Refuse())
from streambed.cli import main
code = main(sys.argv[2:])
leaked = sorted(m for m in sys.modules if m.partition(".")[0] in refused)
print(json.dumps({"leaked": leaked}), file=sys.stderr)
sys.exit(code)
"""


def run_core(*argv: str, cwd, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", REFUSING_RUNNER, json.dumps(sorted(optional_modules())), *argv],
                          cwd=cwd, capture_output=True, text=True, timeout=timeout)


def leaked(run: subprocess.CompletedProcess) -> list[str]:
    return json.loads(run.stderr.strip().splitlines()[-1])["leaked"]


def test_the_refused_modules_cover_every_optional_part():
    """The check below means something only if it refuses the parts' packages (and not the core's)."""
    refused = optional_modules()
    assert {"pyspark", "ansible_runner", "fabric", "kafka", "confluent_kafka", "requests",
            "prometheus_api_client", "grafana_client", "pyflink"} <= refused
    assert not {"numpy", "yaml", "rich", "pulp", "skopt", "sklearn", "matplotlib", "scipy"} & refused


def test_a_sim_plan_runs_on_the_core_alone(tmp_path):
    run = run_core("plan", "--query", "paper-q11-linear", "--rate", "2e7", "--profiles", "4096", "--timing", "quick",
                   "--max-measurements", "3", "--campaign-dir", "p", "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert leaked(run) == []
    plan = json.loads(run.stdout)["plan"]
    assert [e["memory_mb"] for e in plan["entries"]] == [4096] and plan["entries"][0]["slots"] > 0
    assert (tmp_path / "p" / "plan.json").is_file() and (tmp_path / "p" / "model.png").is_file()

    # re-planning from the records: fit on the campaign's ledger, its report page
    fit = run_core("fit", "--measurements", "p", "--rate", "3e7", "--family", "linear", "--json", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr[-2000:]
    assert leaked(fit) == []
    report = run_core("report", "--campaign-dir", "p", "--out", "page", cwd=tmp_path)
    assert report.returncode == 0, report.stderr[-2000:]
    assert (tmp_path / "page").exists()


def test_replanning_from_the_papers_records_runs_on_the_core_alone(tmp_path):
    fit = run_core("fit", "--measurements", str(PAPER_DATA / "runs" / "search_q5-20230620132451.csv"), "--rate", "2.5e6",
                   "--family", "log", "--training", "paper-prefix", "--min-marginal", "0", "--memory", "2048,4096", "--json",
                   cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr[-2000:]
    # the paper's Table IV for q5 (its section VI model usage: docs/records.md)
    assert {e["memory_mb"]: e["slots"] for e in json.loads(fit.stdout)["entries"]} == {2048: 1069, 4096: 1079}
    opt = run_core("optimize", "--from-metrics", str(PAPER_DATA / "bids2_vectors.json"), "--query", "q5", "--memory", "4096",
                   "--json", cwd=tmp_path)
    assert opt.returncode == 0, opt.stderr[-2000:]
    assert {(s["query"], s["memory_mb"]) for s in json.loads(opt.stdout)["solves"]} == {("q5", 4096)}
    assert leaked(fit) == [] and leaked(opt) == []


@pytest.mark.parametrize("argv, wanted", [
    (["data", "generate", "--events", "10", "--query", "q5", "--lake", "lake"],
     "streambed: error: streambed data generate needs the 'spark' extra: pip install 'streambed[spark]'"),
    (["plan", "--query", "q1", "--testbed", "flink", "--rate", "1e6", "--campaign-dir", "f"],
     "streambed: error: --testbed flink needs the 'flink' extra: pip install 'streambed[flink]'"),
    (["testbed", "stop"],
     "streambed: error: streambed testbed stop needs the 'flink' extra: pip install 'streambed[flink]'"),
])
def test_a_command_whose_part_is_missing_names_its_extra_in_one_line(tmp_path, argv, wanted):
    run = run_core(*argv, cwd=tmp_path, timeout=60)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[:-1] == [wanted]  # the last line is the runner's own


def test_missing_extra_names_the_extra_of_the_missing_module():
    error = ModuleNotFoundError("No module named 'confluent_kafka.admin'", name="confluent_kafka.admin")
    assert str(missing_extra("streambed data load-kafka", error)) == \
        "streambed data load-kafka needs the 'kafka' extra: pip install 'streambed[kafka]'"
    assert isinstance(missing_extra("x", error), UserError)
    # a module of no extra is a broken installation, not a part left out: no advice to give
    assert missing_extra("x", ModuleNotFoundError("No module named 'numpy'", name="numpy")) is None
    assert missing_extra("x", ModuleNotFoundError("No module named ''")) is None
    assert extra_for("ansible_runner.exceptions") == "infra" and extra_for("kafkaesque") is None


def test_pyflink_is_named_with_the_package_the_extra_cannot_pull_in():
    hint = install_hint("flink", "pyflink")
    assert hint.startswith("pip install 'streambed[flink]', then pip install --no-deps apache-flink")
    assert "make install" in hint
    assert install_hint("spark", "pyspark") == "pip install 'streambed[spark]'"


def test_every_extra_named_in_code_is_a_part_of_pyproject_and_all_installs_every_part():
    assert set(EXTRA_OF_MODULE.values()) <= set(PARTS) <= set(EXTRAS)
    (everything,) = EXTRAS["all"]
    assert set(Requirement(everything).extras) == set(PARTS)
    core = {canonicalize_name(Requirement(r).name) for r in PYPROJECT["dependencies"]}
    for part in PARTS:
        assert not core & {canonicalize_name(r.name) for r in project_requirements(part)}, part


def test_make_install_installs_every_part_with_the_lock():
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"pip install --quiet -c \$\(LOCK\) -e '\.\[all,test\]'", makefile)


def test_the_lock_pins_what_pyproject_pins_at_the_same_version():
    """A pin changed in pyproject.toml without make lock would make make install fail on a fresh clone."""
    locked = {}
    for line in (REPO / "requirements.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            locked[canonicalize_name(name)] = version
    pins = [Requirement(r) for r in PYPROJECT["dependencies"]]
    pins += [Requirement(r) for part in (*PARTS, "test") for r in EXTRAS[part]]
    for req in pins:
        name = canonicalize_name(req.name)
        if name == "streambed":
            continue
        (spec,) = req.specifier
        assert spec.operator == "==", f"{req}: pin it with =="
        assert locked.get(name) == spec.version, f"{req}: requirements.lock has {locked.get(name)} (make lock)"
    assert "streambed" not in locked
