"""The Flink job (flink/): build, --explain against the query headers, errors, a short local run.

Everything runs locally with `java -cp "$FLINK_HOME/lib/*:<jar>"` (no cluster): the jar is built
once per session through `make flink-job`; --explain of all queries runs in two JVMs
(org.streambed.flink.ExplainMany, the same code path as the CLI's --explain); the rate test runs
the job for ~20 s on a MiniCluster inside one JVM (--local-seconds).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import REPO

QUERIES = REPO / "flink" / "queries"
QUERY_FILES = sorted(QUERIES.glob("q*.sql"), key=lambda p: int(p.stem[1:]))
UNSUPPORTED_FILES = sorted((QUERIES / "unsupported").glob("q*.sql"), key=lambda p: int(p.stem[1:]))
JAR = REPO / "flink" / "build" / "streambed-job.jar"
PAPER_SHAPES = {  # Table II / Fig. 8 of the paper: operator kinds in topological order, sink last
    "q1": ["Calc", "Sink"],
    "q2": ["Calc", "Sink"],
    "q11": ["Calc", "GroupWindowAggregate", "Calc", "Sink"],
}

pytestmark = pytest.mark.skipif(
    shutil.which("java") is None or shutil.which("javac") is None, reason="needs a JDK 17 (java, javac)"
)


@pytest.fixture(scope="session")
def flink_home() -> Path:
    out = subprocess.run(
        [sys.executable, "-c", "import os, pyflink; print(os.path.dirname(pyflink.__file__))"],
        capture_output=True, text=True, check=True,
    )
    home = Path(out.stdout.strip())
    assert list((home / "lib").glob("flink-dist*.jar")), home
    return home


@pytest.fixture(scope="session")
def jar(flink_home: Path) -> Path:
    subprocess.run(["make", "-C", str(REPO), "--no-print-directory", "flink-job"], check=True,
                   capture_output=True, text=True)
    assert JAR.is_file()
    return JAR


def _cp(flink_home: Path, jar: Path) -> str:
    return f"{flink_home}/lib/*:{jar}"


def run_job(flink_home: Path, jar: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["java", "-cp", _cp(flink_home, jar), "org.streambed.flink.StreamBedJob", *args],
        capture_output=True, text=True, timeout=timeout,
    )


def header(path: Path) -> tuple[list[str], list[str]]:
    text = path.read_text()
    ops = re.search(r"^-- streambed-operators:(.*)$", text, re.M)
    edges = re.search(r"^-- streambed-edges:(.*)$", text, re.M)
    assert ops and edges, f"{path.name} lacks the streambed-operators / streambed-edges header"
    return ops.group(1).split(), edges.group(1).split()


def graph(explained: dict) -> tuple[list[str], list[str]]:
    ops = [o["name"] for o in explained["operators"]]
    edges = [f"{i}>{o['name']}" for o in explained["operators"] for i in o["inputs"]]
    return ops, edges


@pytest.fixture(scope="session")
def explained(flink_home: Path, jar: Path) -> dict[str, tuple[int, str]]:
    """--explain of every query file: {file name: (exit code, stdout line or error line)}."""
    files = [str(p) for p in QUERY_FILES + UNSUPPORTED_FILES]
    halves = [files[0::2], files[1::2]]  # two JVMs for the two cores

    def explain(batch: list[str]) -> str:
        return subprocess.run(
            ["java", "-cp", _cp(flink_home, jar), "org.streambed.flink.ExplainMany", *batch],
            capture_output=True, text=True, timeout=300, check=True,
        ).stdout

    with ThreadPoolExecutor(2) as pool:
        outputs = list(pool.map(explain, halves))
    result = {}
    for out in outputs:
        for line in out.splitlines():
            name, code, msg = line.split("\t", 2)
            result[Path(name).name if "unsupported" not in name else "unsupported/" + Path(name).name] = (
                int(code), msg)
    assert len(result) == len(files)
    return result


def test_query_set_is_complete():
    names = {p.stem for p in QUERY_FILES}
    assert {"q0", "q1", "q2", "q3", "q5", "q7", "q8", "q11", "q12"} <= names
    assert names | {p.stem for p in UNSUPPORTED_FILES} == {f"q{i}" for i in range(23)}


@pytest.mark.parametrize("path", QUERY_FILES, ids=lambda p: p.stem)
def test_explain_matches_header(path: Path, explained):
    code, msg = explained[path.name]
    assert code == 0, msg
    doc = json.loads(msg)
    assert graph(doc) == header(path)
    assert doc["sources"] and all(o["description"] for o in doc["operators"])
    assert doc["operators"][-1]["name"].startswith("Sink#")


@pytest.mark.parametrize("path", UNSUPPORTED_FILES, ids=lambda p: p.stem)
def test_unsupported_queries_fail_with_documented_error(path: Path, explained):
    code, msg = explained["unsupported/" + path.name]
    expected = re.search(r"^-- streambed-expected-error: (.*)$", path.read_text(), re.M).group(1)
    assert code == 3 and msg.startswith("SQL_ERROR: ") and expected in msg, msg
    assert expected in (REPO / "flink" / "README.md").read_text()


def test_paper_query_shapes(explained):
    kinds = {q: [n.split("#")[0] for n in graph(json.loads(explained[f"{q}.sql"][1]))[0]]
             for q in ("q1", "q2", "q5", "q8", "q11")}
    for q, shape in PAPER_SHAPES.items():
        assert kinds[q] == shape, (q, kinds[q])
    for q in ("q5", "q8"):  # eight operators plus the sink
        assert len(kinds[q]) == 9 and kinds[q][-1] == "Sink", kinds[q]
    assert kinds["q5"].count("GroupWindowAggregate") == 1 and "GroupAggregate" in kinds["q5"]
    assert "Join" in kinds["q5"]
    assert kinds["q8"].count("GroupWindowAggregate") == 2 and "Join" in kinds["q8"]


def test_cli_explain_prints_one_json_line(flink_home, jar):
    sql = (QUERIES / "q5.sql").read_text()
    r = run_job(flink_home, jar, "--sql-b64", base64.b64encode(sql.encode()).decode(), "--explain")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1
    assert graph(json.loads(lines[0])) == header(QUERIES / "q5.sql")


def test_sql_error_exits_3_with_flinks_message(flink_home, jar, tmp_path):
    bad = tmp_path / "bad.sql"
    bad.write_text(
        "SET 'table.exec.mini-batch.enabled' = 'false';\n"
        "CREATE TABLE s (a BIGINT) WITH ('connector' = 'blackhole');\n"
        "INSERT INTO s SELECT nosuch_column FROM bid;\n"
    )
    for extra in (["--explain"], ["--initial-rate", "10", "--local-seconds", "5"]):
        r = run_job(flink_home, jar, "--sql-file", str(bad), *extra)
        assert r.returncode == 3, (r.stdout, r.stderr)
        errors = [line for line in r.stderr.splitlines() if line.startswith("SQL_ERROR:")]
        assert len(errors) == 1, r.stderr
        assert "Column 'nosuch_column' not found" in errors[0]


@pytest.mark.parametrize(
    "args, needle",
    [
        ([], "exactly one of --sql-file"),
        (["--sql-file", "Q", "--explain", "--bogus", "1"], "unknown argument --bogus"),
        (["--sql-file", "Q", "--explain", "--source-parallelism", "zero"], "--source-parallelism must be an integer"),
        (["--sql-file", "Q", "--initial-rate", "10", "--catch-up", "-1"], "--catch-up"),
        (["--sql-file", "Q"], "a rate is required"),
        (["--sql-file", "Q", "--initial-rate", "10", "--parallelism", "Join#9=2"], "unknown operator 'Join#9'"),
    ],
    ids=["no-sql", "unknown-flag", "bad-int", "bad-catch-up", "no-rate", "unknown-operator"],
)
def test_bad_arguments_exit_2(flink_home, jar, args, needle):
    args = [str(QUERIES / "q1.sql") if a == "Q" else a for a in args]
    r = run_job(flink_home, jar, *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    errors = [line for line in r.stderr.splitlines() if line.startswith("ARG_ERROR:")]
    assert len(errors) == 1 and needle in errors[0], r.stderr


STATS = re.compile(r"^STATS emitted=(\d+) pending=(\d+) target=([\d.]+) elapsed=([\d.]+)")


def test_local_run_follows_the_rate_file(flink_home, jar, tmp_path):
    """20000 ev/s for ~10 s, then 5000 ev/s: the sources' own counters follow within 10 % / ~2 s."""
    rate = tmp_path / "rate.txt"

    def set_rate(value: float) -> None:
        tmp = tmp_path / "rate.tmp"
        tmp.write_text(f"{value}\n")
        os.replace(tmp, rate)

    set_rate(20000)
    proc = subprocess.Popen(
        ["java", "-cp", _cp(flink_home, jar), "org.streambed.flink.StreamBedJob",
         "--sql-file", str(QUERIES / "q1.sql"), "--rate-file", str(rate),
         "--source-parallelism", "2", "--parallelism", "Calc#1=2,Sink#2=1", "--local-seconds", "24"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    samples: list[tuple[int, int, float, float]] = []  # emitted, pending, target, elapsed
    stderr: list[str] = []
    threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True).start()
    switched_at = None
    try:
        for line in proc.stdout:
            m = STATS.match(line)
            if not m:
                continue
            s = (int(m[1]), int(m[2]), float(m[3]), float(m[4]))
            samples.append(s)
            started = [x for x in samples if x[0] > 0]
            if switched_at is None and started and s[3] - started[0][3] >= 10.0:
                set_rate(5000)
                switched_at = s[3]
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, "".join(stderr)[-3000:]
    assert switched_at is not None, samples

    started = [s for s in samples if s[0] > 0]
    first = started[0]
    before = [s for s in started if s[3] <= switched_at]
    last_fast = before[-1]
    fast_rate = (last_fast[0] - first[0]) / (last_fast[3] - first[3])
    assert last_fast[3] - first[3] >= 9.5
    assert abs(fast_rate - 20000) <= 2000, (fast_rate, samples)
    assert all(abs(s[2] - 20000) < 1e-6 for s in before)

    # The new target is read within 2 s, and the emission follows it.
    after = [s for s in samples if s[3] > switched_at]
    slow = [s for s in after if abs(s[2] - 5000) < 1e-6]
    assert slow and slow[0][3] - switched_at <= 2.5, after
    settled = [s for s in slow if s[3] >= slow[0][3] + 1.0]
    assert len(settled) >= 3, after
    slow_rate = (settled[-1][0] - settled[0][0]) / (settled[-1][3] - settled[0][3])
    assert abs(slow_rate - 5000) <= 500, (slow_rate, samples)
    # Nothing holds the source back here: the backlog does not grow.
    assert samples[-1][1] - before[-1][1] <= 0.05 * 20000, samples
