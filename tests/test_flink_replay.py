"""The Flink job's replay mode (--replay-dir): a data set of JSON lines replayed through the paced source.

Small data sets are written by hand in tmp_path; the job runs locally (--local-seconds) as in
test_flink_job.py, whose helpers it reuses. Print sinks show what the source emitted, in order.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest

import test_flink_job
from test_flink_job import QUERIES, STATS, run_job

# The JDK check and the session fixtures (Flink's home, the jar built by `make flink-job`) of the job's tests.
pytestmark = test_flink_job.pytestmark
flink_home = test_flink_job.flink_home
jar = test_flink_job.jar

RATE = 2000.0  # total events/s of the paced run
SECONDS = 8
MAX_BATCH = 256  # NexmarkSourceReader.MAX_BATCH: at most one batch per subtask beyond the schedule
ORIGIN = dt.datetime(2001, 1, 1, tzinfo=dt.timezone.utc)  # the data set's own (event) times


def iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def event(g: int) -> dict:
    """Global event g: 2/6/92 % person/auction/bid as Nexmark; a bid's price is g (to read the order
    back), an auction lasts (id % 20) + 0.5 s of event time."""
    t = ORIGIN + dt.timedelta(milliseconds=g)
    r = g % 50
    if r == 0:  # no state: a missing nested field; dateTime as epoch milliseconds
        return {"event_type": 0, "person": {"id": g, "name": f"p{g}", "emailAddress": "a@b.com", "creditCard": "1",
                                            "city": "Kent", "dateTime": int(t.timestamp() * 1000), "extra": "x"}}
    if r <= 3:
        return {"event_type": 1, "auction": {"id": g, "itemName": "it", "description": "d", "initialBid": 1,
                                             "reserve": 2, "dateTime": iso(t),
                                             "expires": iso(t + dt.timedelta(seconds=g % 20 + 0.5)),
                                             "seller": 7, "category": 10, "extra": "y"}}
    return {"event_type": 2, "bid": {"auction": 1000, "bidder": 1001, "price": g, "channel": "Google",
                                     "url": "https://www.nexmark.com/a/b/c/item.htm?query=1",
                                     "dateTime": iso(t), "extra": "z" * 60}, "unknown_field": [1, {"a": "}"}]}


def write_parts(d: Path, sizes: list[int], first: int = 0) -> list[dict]:
    """Part files of consecutive events (Spark's names: name order is event order); returns the events."""
    d.mkdir(parents=True, exist_ok=True)
    events = []
    g = first
    for k, n in enumerate(sizes):
        with open(d / f"part-{k:05d}-0c1d.json", "w") as f:
            for _ in range(n):
                events.append(event(g))
                f.write(json.dumps(event(g), separators=(",", ":")) + "\n")
                g += 1
    return events


def run_replay(flink_home, jar, sql: Path, data: Path, *args: str, seconds: float = SECONDS):
    r = run_job(flink_home, jar, "--sql-file", str(sql), "--replay-dir", str(data), *args,
                "--local-seconds", str(seconds), timeout=180)
    stats = [(int(m[1]), int(m[2]), float(m[3]), float(m[4]))
             for m in map(STATS.match, r.stdout.splitlines()) if m]
    return r, stats


PRINT_SQL = """
CREATE TABLE out_bid (price BIGINT) WITH ('connector' = 'print', 'print-identifier' = 'BID');
CREATE TABLE out_auction (id BIGINT, len_s BIGINT, dt TIMESTAMP(3), src_len_s BIGINT)
  WITH ('connector' = 'print', 'print-identifier' = 'AUC');
CREATE TABLE out_person (id BIGINT, state VARCHAR, dt TIMESTAMP(3)) WITH ('connector' = 'print', 'print-identifier' = 'PER');
INSERT INTO out_bid SELECT price FROM bid;
INSERT INTO out_auction SELECT auction.id, TIMESTAMPDIFF(SECOND, auction.`dateTime`, auction.expires),
  auction.`dateTime`, auction.id % 20 FROM datagen WHERE event_type = 1;
INSERT INTO out_person SELECT person.id, person.state, person.`dateTime` FROM datagen WHERE event_type = 0;
"""


def test_replay_is_paced_in_order_and_in_processing_time(flink_home, jar, tmp_path):
    """2 source subtasks at 2000 ev/s for 8 s over 40,000 events: the sources' counters follow the
    rate; each split's bids reach the sink as its lines i, i + 2, i + 4, ... in order, without gap;
    dateTime is the emission time and auctions keep their lengths."""
    data = tmp_path / "it's data"  # a quote: the DDL escapes the path
    events = write_parts(data, [25_000, 15_000])
    first = data / "part-00000-0c1d.json"
    lines = first.read_text().splitlines(keepends=True)
    first.write_text("".join(lines[:101]) + "\n   \n" + "".join(lines[101:]))  # blank lines: not events
    for ignored in ("_SUCCESS", "_temporary.json", ".part-00000-0c1d.json.crc", ".hidden.json", "notes.txt"):
        (data / ignored).write_text("not an event\n")
    sql = tmp_path / "print.sql"
    sql.write_text(PRINT_SQL)
    started = dt.datetime.now(dt.timezone.utc)
    r, stats = run_replay(flink_home, jar, sql, data, "--initial-rate", str(RATE), "--source-parallelism", "2")
    ended = dt.datetime.now(dt.timezone.utc)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    assert "REPLAY_" not in r.stdout + r.stderr

    # Pacing: never ahead of the schedule (elapsed counts from submission, before the pacer starts),
    # and at least half of the target once running (a busy 2-core machine).
    assert all(s[0] <= RATE * s[3] + 2 * MAX_BATCH for s in stats), stats
    running = [s for s in stats if s[0] > 0]
    assert all(abs(s[2] - RATE) < 1e-6 for s in running), stats  # before: readers not registered yet
    assert len(running) >= 4, stats
    rate = (running[-1][0] - running[0][0]) / (running[-1][3] - running[0][3])
    assert 0.5 * RATE <= rate <= 1.1 * RATE, (rate, stats)

    # Order: split i of 2 replays the non-blank lines i, i + 2, ...: its bids arrive as a prefix of
    # its own sequence (one channel per source subtask keeps its order).
    printed = [int(m[1]) for m in re.finditer(r"^BID> \+I\[(\d+)\]$", r.stdout, re.M)]
    bids = [e["bid"]["price"] for e in events if e["event_type"] == 2]
    assert len(printed) >= 0.5 * RATE * 3 and len(printed) <= running[-1][0], (len(printed), running[-1])
    for split in (0, 1):
        mine = [p for p in printed if p % 2 == split]
        expected = [p for p in bids if p % 2 == split]
        assert mine == expected[:len(mine)], f"split {split}: {mine[:20]} ... vs {expected[:20]} ..."
    # ... and both splits advance together: the merged stream is close to the data set's order.
    assert abs(sum(p % 2 == 0 for p in printed) - sum(p % 2 == 1 for p in printed)) <= RATE / 2

    # Processing time: dateTime is the emission time; expires - dateTime is the data set's length.
    auctions = re.findall(r"^AUC> \+I\[(\d+), (\d+), (\S+), (\d+)\]$", r.stdout, re.M)
    assert len(auctions) >= 100, r.stdout[-2000:]
    for _, length, when, src_length in auctions:
        assert int(length) == int(src_length)  # TIMESTAMPDIFF floors the .5 s
        t = dt.datetime.fromisoformat(when).replace(tzinfo=dt.timezone.utc)
        assert started - dt.timedelta(seconds=1) <= t <= ended, (when, started, ended)
    persons = re.findall(r"^PER> \+I\[(\d+), (\S+), (\S+)\]$", r.stdout, re.M)
    assert persons and all(state == "null" for _, state, _ in persons), persons[:5]
    assert all(started - dt.timedelta(seconds=1) <= dt.datetime.fromisoformat(w).replace(tzinfo=dt.timezone.utc)
               <= ended for _, _, w in persons)


def test_replay_exhausted_fails_the_job(flink_home, jar, tmp_path):
    """500 events at 1000 ev/s over 2 subtasks: a split runs out after its 250 events, the job fails."""
    write_parts(tmp_path / "small", [300, 200])
    r, stats = run_replay(flink_home, jar, QUERIES / "q1.sql", tmp_path / "small",
                          "--initial-rate", "1000", "--source-parallelism", "2", seconds=15)
    assert r.returncode == 1, (r.stdout[-2000:], r.stderr[-3000:])
    lines = [line for line in (r.stdout + r.stderr).splitlines() if line.startswith("REPLAY_EXHAUSTED: ")]
    assert lines, r.stderr[-3000:]
    assert re.match(r"REPLAY_EXHAUSTED: the data set \S*small ran out after 250 events \(split [01] of 2;"
                     r" 500 events in the data set\); generate more events or shorten the run$", lines[0]), lines
    assert all(s[0] <= 500 for s in stats), stats
    assert len(stats) < 12, "the job failed when the data ran out, not at the end of the run"


def test_malformed_line_names_file_and_line(flink_home, jar, tmp_path):
    data = tmp_path / "bad"
    write_parts(data, [30])
    bad = data / "part-00001-0c1d.json"
    bad.write_text(json.dumps(event(30)) + "\n\n" + json.dumps({"event_type": 7, "bid": {}}) + "\n")
    r, _ = run_replay(flink_home, jar, QUERIES / "q1.sql", data, "--initial-rate", "1000", seconds=15)
    assert r.returncode == 1, (r.stdout[-2000:], r.stderr[-3000:])
    lines = [line for line in (r.stdout + r.stderr).splitlines() if line.startswith("REPLAY_ERROR: ")]
    assert lines == [f"REPLAY_ERROR: {bad}:3: unknown event_type 7 (0 person, 1 auction, 2 bid)"], r.stderr[-3000:]


def _empty_dir(tmp_path: Path) -> Path:
    d = tmp_path / "empty"
    (d / "sub.json").mkdir(parents=True)  # a directory, not a data file
    for name in ("_SUCCESS", ".part-00000.json", "_part.json", "data.jsonl", "data.txt"):
        (d / name).write_text("{}\n")
    return d


@pytest.mark.parametrize(
    "case, extra, needle",
    [
        ("missing", ["--initial-rate", "10"], "no such directory"),
        ("missing", ["--explain"], "no such directory"),
        ("empty", ["--initial-rate", "10"], "no data file"),
        ("file", ["--explain"], "not a directory"),
        ("ok", ["--initial-rate", "10", "--splits", "7"], "--splits does not apply"),
    ],
    ids=["missing", "missing-explain", "no-json", "file", "with-splits"],
)
def test_bad_replay_dir_exits_2(flink_home, jar, tmp_path, case, extra, needle):
    write_parts(tmp_path / "ok", [3])
    d = {"missing": tmp_path / "nope", "empty": _empty_dir(tmp_path), "file": tmp_path / "ok" / "part-00000-0c1d.json",
         "ok": tmp_path / "ok"}[case]
    r = run_job(flink_home, jar, "--sql-file", str(QUERIES / "q1.sql"), "--replay-dir", str(d), *extra)
    assert r.returncode == 2, (r.stdout, r.stderr)
    errors = [line for line in r.stderr.splitlines() if line.startswith("ARG_ERROR:")]
    assert len(errors) == 1 and "--replay-dir" in errors[0] and needle in errors[0], r.stderr
    assert "Exception" not in r.stderr

