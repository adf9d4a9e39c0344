"""The campaign ledger: memoized durable steps, resume checks, refusal of foreign files, and a real
SIGKILL in the middle of a campaign."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from streambed.errors import UserError
from streambed.ledger import Ledger

CONTROLLER = Path(__file__).resolve().parents[1] / "controller"
PARAMS = {"query": "q1", "rate": 2.5e6, "memory": 4096}


def must_not_run() -> dict:
    raise AssertionError("fn called although the step is in the ledger")


def new(d: Path, kind: str = "estimation", params: dict = PARAMS) -> Ledger:
    return Ledger.open(d, kind, params, resume=False)


# ---------------------------------------------------------------------- steps and replay


def test_steps_run_once_and_replay_after_reopen(tmp_path):
    d = tmp_path / "camp" / "nested"  # directory created on demand
    calls = []

    def measure(i):
        calls.append(i)
        return {"value": i * i, "tags": ("a", "b")}

    with new(d) as led:
        assert led.path == d / Ledger.FILENAME and led.path.is_file()
        assert led.kind == "estimation" and led.params == PARAMS
        first = [led.step(f"m{i}", lambda i=i: measure(i)) for i in range(3)]
        # The live value is what a replay will see (tuple -> list), not fn's own object.
        assert first[2] == {"value": 4, "tags": ["a", "b"]}
        assert led.step("m1", must_not_run) == {"value": 1, "tags": ["a", "b"]}
        assert (led.executed, led.replayed) == (3, 1)
        assert led.has("m0") and not led.has("m3")
    assert calls == [0, 1, 2]

    with Ledger.open(d, "estimation", dict(PARAMS), resume=True) as led:
        assert led.kind == "estimation" and led.params == PARAMS
        assert (led.executed, led.replayed) == (0, 0)
        assert [led.step(f"m{i}", must_not_run) for i in range(3)] == first
        assert led.step("m3", lambda: measure(3)) == {"value": 9, "tags": ["a", "b"]}
        assert (led.executed, led.replayed) == (1, 3)
    assert calls == [0, 1, 2, 3]


def test_a_rerun_step_runs_again_and_returns_what_was_recorded(tmp_path):
    calls = []
    with new(tmp_path / "camp") as led:
        def first():
            led.record("run-started", {"run": 1})
            calls.append("first")
            return {"value": 1}

        def again():
            led.record("run-started", {"run": 2})  # the same event again: the log holds it already
            calls.append("again")
            return {"value": 2}

        led.step("m0", first)
        assert led.step("m0", again, rerun=True) == {"value": 1}
        assert led.step("m0", must_not_run) == {"value": 1}
        assert led.executed == 1 and led.replayed == 2
        led.record("run-stopped", {})  # recording goes on after the re-run
        assert [(e["kind"], e["data"]) for e in led.events()] == [("run-started", {"run": 1}), ("run-stopped", {})]
    assert calls == ["first", "again"]


def test_failing_step_stores_nothing_and_runs_again(tmp_path):
    d = tmp_path / "camp"

    def boom():
        raise RuntimeError("testbed fell over")

    with new(d) as led:
        with pytest.raises(RuntimeError, match="fell over"):
            led.step("m0", boom)
        assert not led.has("m0") and led.steps() == []
        assert (led.executed, led.replayed) == (0, 0)
    with Ledger.open(d, "estimation", PARAMS, resume=True) as led:
        assert not led.has("m0")
        assert led.step("m0", lambda: {"ok": True}) == {"ok": True}
        assert led.executed == 1 and led.has("m0")


@pytest.mark.parametrize(
    "result, what",
    [({"x": object()}, "not JSON-serializable"), ([1, 2], "expected a dict"), ({"x": {1, 2}}, "set")],
)
def test_non_json_step_result_is_a_type_error_naming_the_key(tmp_path, result, what):
    with new(tmp_path / "camp") as led:
        with pytest.raises(TypeError, match="window-7") as info:
            led.step("window-7", lambda: result)
        assert what in str(info.value)
        assert not led.has("window-7") and led.executed == 0


def test_steps_prefix_in_completion_order(tmp_path):
    with new(tmp_path / "camp") as led:
        for key in ["b/2", "a_1", "b/1", "ab", "b/10"]:
            led.step(key, lambda key=key: {"k": key})
    # Completion order continues across processes; it is not key order.
    with Ledger.open(tmp_path / "camp", "estimation", PARAMS, resume=True) as led:
        led.step("b/0", lambda: {"k": "b/0"})
        assert [k for k, _ in led.steps("b/")] == ["b/2", "b/1", "b/10", "b/0"]
        assert led.steps("b/1") == [("b/1", {"k": "b/1"}), ("b/10", {"k": "b/10"})]
        # '_' and '%' are literal characters in a prefix, not wildcards.
        assert [k for k, _ in led.steps("a_")] == ["a_1"]
        assert led.steps("%") == []
        assert [k for k, _ in led.steps()] == ["b/2", "a_1", "b/1", "ab", "b/10", "b/0"]


def test_events_and_result_round_trip(tmp_path):
    d = tmp_path / "camp"
    with new(d) as led:
        assert led.events() == [] and led.result() is None
        led.record("run-started", {"parallelism": [1, 2]})
        led.record("window-discarded", {"window": 3, "why": "job restarted"})
        led.record("run-started", {"parallelism": [2, 2]})
        led.set_result({"slots": 8})
        led.set_result({"slots": 12, "rate": 2.5e6})  # replaces
        with pytest.raises(TypeError, match="run-started"):
            led.record("run-started", {"bad": object()})
    with Ledger.open(d, "estimation", PARAMS, resume=True) as led:
        evs = led.events()
        assert [e["kind"] for e in evs] == ["run-started", "window-discarded", "run-started"]
        assert [e["data"] for e in evs][1] == {"window": 3, "why": "job restarted"}
        assert all(set(e) == {"seq", "time", "kind", "data"} for e in evs)
        seqs = [e["seq"] for e in evs]
        assert seqs == sorted(seqs) and len(set(seqs)) == 3
        assert all(abs(e["time"] - time.time()) < 60 for e in evs)
        assert [e["data"] for e in led.events("run-started")] == [
            {"parallelism": [1, 2]},
            {"parallelism": [2, 2]},
        ]
        assert led.events("nothing") == []
        assert led.result() == {"slots": 12, "rate": 2.5e6}


def test_every_commit_is_in_the_main_file_with_full_sync(tmp_path):
    """A copy of ledger.sqlite alone, taken while the campaign is still open (as after a kill, or a
    backup that skips side files), holds every step: nothing lives only in a -wal file."""
    d = tmp_path / "camp"
    with new(d) as led:
        assert led._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        for i in range(20):
            led.step(f"m{i}", lambda i=i: {"value": i})
        copy = tmp_path / "copy"
        copy.mkdir()
        (copy / Ledger.FILENAME).write_bytes((d / Ledger.FILENAME).read_bytes())
    assert not list(d.glob("*-wal")) and not list(copy.glob("*-wal"))
    with Ledger.open(copy, "estimation", PARAMS, resume=True) as led:
        assert [k for k, _ in led.steps()] == [f"m{i}" for i in range(20)]


def test_a_ledger_written_in_wal_mode_resumes_with_its_wal_folded_in(tmp_path):
    """Ledgers of earlier StreamBed versions kept their last commits in ledger.sqlite-wal."""
    d = tmp_path / "camp"
    new(d).close()
    conn = sqlite3.connect(d / Ledger.FILENAME, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("INSERT INTO steps (key, time, data) VALUES ('m0', 0, '{\"value\": 0}')")
    killed = tmp_path / "killed"  # the files as a killed writer leaves them: the last commit in the WAL
    killed.mkdir()
    for name in (Ledger.FILENAME, Ledger.FILENAME + "-wal"):
        (killed / name).write_bytes((d / name).read_bytes())
    conn.close()
    assert (killed / (Ledger.FILENAME + "-wal")).stat().st_size > 0
    with Ledger.open(killed, "estimation", PARAMS, resume=True) as led:
        assert led.step("m0", must_not_run) == {"value": 0}
    assert not (killed / (Ledger.FILENAME + "-wal")).exists()


def test_a_full_disk_is_one_line_and_keeps_every_earlier_step(tmp_path):
    class FullDisk:
        """The ledger's connection on a disk that just filled up: reads work, writes fail as SQLite's do."""

        def __init__(self, conn):
            self.conn = conn

        def execute(self, sql, *args):
            if sql.lstrip().upper().startswith("INSERT"):
                raise sqlite3.OperationalError("database or disk is full")
            return self.conn.execute(sql, *args)

        def close(self):
            self.conn.close()

    d = tmp_path / "camp"
    with new(d) as led:
        led.step("m0", lambda: {"value": 0})
        led._conn = FullDisk(led._conn)
        for write in (lambda: led.step("m1", lambda: {"value": 1}), lambda: led.record("run-started", {}),
                      lambda: led.set_result({"slots": 1})):
            with pytest.raises(UserError, match=r"cannot write the ledger \(database or disk is full\); every step "
                                                 r"before this one is kept: free the space, then continue with --resume"):
                write()
    with Ledger.open(d, "estimation", PARAMS, resume=True) as led:
        assert led.steps() == [("m0", {"value": 0})]


# ---------------------------------------------------------------------- one writer per campaign


@pytest.mark.parametrize("resume", [True, False])
def test_a_second_writer_is_refused_with_the_holders_pid(tmp_path, resume):
    d = tmp_path / "camp"
    with new(d) as led:
        led.step("m0", lambda: {"value": 0})
        with pytest.raises(UserError, match=rf"{d} is in use by process {os.getpid()}\b"):
            Ledger.open(d, "estimation", PARAMS, resume=resume)
        assert [k for k, _ in led.steps()] == ["m0"]  # the holder goes on untouched
    with Ledger.open(d, "estimation", PARAMS, resume=True) as led:  # closed: free again
        assert led.step("m0", must_not_run) == {"value": 0}


def test_the_lock_of_a_killed_process_is_taken_over(tmp_path):
    d = tmp_path / "camp"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from streambed.ledger import Ledger; "
         "Ledger.open(sys.argv[1], 'estimation', {}, resume=False); print('open', flush=True); time.sleep(60)", str(d)],
        env={**os.environ, "PYTHONPATH": str(CONTROLLER)}, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(UserError, match=f"in use by process {holder.pid}"):
            Ledger.open(d, "estimation", {}, resume=True)
    finally:
        holder.kill()
        holder.wait()
    assert (d / "ledger.lock").read_text().strip() == str(holder.pid)  # the stale lock file is still there
    with Ledger.open(d, "estimation", {}, resume=True):
        assert (d / "ledger.lock").read_text().strip() == str(os.getpid())


# ---------------------------------------------------------------------- damage


def _damage_pages(path: Path, pages: range) -> None:
    """Overwrite whole database pages with garbage (as a failing disk or a bad copy would)."""
    size = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
    with open(path, "r+b") as f:
        for page in pages:
            f.seek(page * size)
            f.write(b"\xa5" * size)


def _filled(d: Path, steps: int = 300) -> None:
    with new(d) as led:
        for i in range(steps):
            led.step(f"m{i}", lambda i=i: {"value": i, "pad": "x" * 200})
        led.record("run-started", {"run": 1})


def test_a_damaged_ledger_is_refused_not_replayed_in_part(tmp_path):
    from streambed.ledger import read_campaign, verify

    d = tmp_path / "camp"
    _filled(d)
    assert verify(d)["intact"] and verify(d)["steps"] == 300
    _damage_pages(d / Ledger.FILENAME, range(8, 12))
    with pytest.raises(UserError, match=r"damaged ledger .*nothing is replayed.*ledger verify --campaign-dir"):
        Ledger.open(d, "estimation", PARAMS, resume=True)
    with pytest.raises(UserError, match="damaged ledger"):
        read_campaign(d)
    report = verify(d)
    assert not report["intact"] and report["problems"]
    assert report["steps"] < 300  # what survives, counted


def test_a_row_that_is_not_an_object_names_itself(tmp_path):
    """In a ledger written before checksums (schema version 1), a row that is not a JSON object is found
    by decoding it; in a current one its checksum gives it away first."""
    from streambed.ledger import verify

    d = tmp_path / "camp"
    _filled(d, steps=3)
    _to_version_1(d / Ledger.FILENAME)
    _sqlite_file(d / Ledger.FILENAME, ["UPDATE steps SET data = 'not json' WHERE key = 'm1'",
                                       "UPDATE steps SET data = '[1, 2]' WHERE key = 'm2'"])
    with pytest.raises(UserError, match=r"damaged at step 2 \('m1'\): not JSON .*; nothing is replayed"):
        Ledger.open(d, "estimation", PARAMS, resume=True)  # refused whole, before any step replays
    conn = sqlite3.connect(d / Ledger.FILENAME)
    led = Ledger(conn, d / Ledger.FILENAME, "estimation", PARAMS, None)  # a ledger damaged after it was opened
    assert led.step("m0", must_not_run) == {"value": 0, "pad": "x" * 200}
    with pytest.raises(UserError, match=r"damaged at step 2 \('m1'\): not JSON"):
        led.step("m1", must_not_run)
    with pytest.raises(UserError, match=r"step 3 \('m2'\): holds a list, not an object"):
        led.step("m2", must_not_run)
    led.close()
    report = verify(d)
    assert not report["intact"] and report["steps"] == 1 and report["unchecked"] == 2  # m0 and the event
    assert report["unreadable"] == ["step 2 ('m1')", "step 3 ('m2')"]


# ---------------------------------------------------------------------- checksums


def _to_version_1(path: Path) -> None:
    """The ledger at ``path`` as StreamBed wrote it before checksums: schema version 1, no checksum
    column, no checksum in meta (the same tables and rows otherwise)."""
    _sqlite_file(path, [*(f"ALTER TABLE {t} DROP COLUMN checksum" for t in ("steps", "events", "result")),
                        "DELETE FROM meta WHERE key = 'checksum'",
                        "UPDATE meta SET value = '1' WHERE key = 'schema_version'"])


def _change_digit(path: Path, table: str, where: str) -> None:
    """One digit of a stored number changed, the row otherwise untouched (still valid JSON)."""
    conn = sqlite3.connect(path)
    [(text,)] = conn.execute(f"SELECT data FROM {table} WHERE {where}").fetchall()
    i = next(i for i, c in enumerate(text) if c.isdigit() and c != "9")
    conn.execute(f"UPDATE {table} SET data = ? WHERE {where}", (text[:i] + str(int(text[i]) + 1) + text[i + 1:],))
    conn.commit()
    conn.close()


def test_a_changed_digit_is_damage_at_its_step_on_resume_read_and_verify(tmp_path):
    from streambed.ledger import read_campaign, verify

    d = tmp_path / "camp"
    with new(d) as led:
        for i in range(5):
            led.step(f"m{i}", lambda i=i: {"achieved_rate": 1234.5 + i})
        led.set_result({"slots": 132})
    assert verify(d)["intact"] and verify(d)["unchecked"] == 0
    _change_digit(d / Ledger.FILENAME, "steps", "key = 'm3'")
    report = verify(d)
    assert not report["intact"] and report["steps"] == 4
    assert report["damage"] == ["damaged at step 4 ('m3'): its content does not match its checksum (changed after "
                                "it was written)"]
    with pytest.raises(UserError, match=r"damaged at step 4 \('m3'\).*checksum .*; nothing is replayed"):
        Ledger.open(d, "estimation", PARAMS, resume=True)
    with pytest.raises(UserError, match=r"damaged at step 4"):
        read_campaign(d)


@pytest.mark.parametrize("table, where, label", [("result", "id = 1", "the result"),
                                                 ("events", "seq = 1", "event 1 ('run-started')"),
                                                 ("meta", "key = 'params'", "meta")])
def test_a_changed_digit_in_the_result_an_event_or_the_parameters_is_damage(tmp_path, table, where, label):
    from streambed.ledger import read_campaign, verify

    d = tmp_path / "camp"
    with new(d) as led:
        led.step("m0", lambda: {"v": 1})
        led.record("run-started", {"run": 17})
        led.set_result({"slots": 132})
    if table == "meta":
        conn = sqlite3.connect(d / Ledger.FILENAME)
        conn.execute("UPDATE meta SET value = replace(value, '4096', '4097') WHERE key = 'params'")
        conn.commit()
        conn.close()
    else:
        _change_digit(d / Ledger.FILENAME, table, where)
    for read in (lambda: Ledger.open(d, "estimation", PARAMS, resume=True), lambda: read_campaign(d)):
        with pytest.raises(UserError, match=re.escape(label)) as info:
            read()
        assert "damaged" in str(info.value) and "\n" not in str(info.value)
    if table != "meta":
        assert not verify(d)["intact"]


def test_an_incomplete_step_is_damage_not_a_key_error(tmp_path):
    """A step whose data lacks what its reader needs (an estimate's warm-up without achieved_rate): the
    ledger is refused as damaged, naming the step and the missing field, before the step re-runs."""
    d = tmp_path / "camp"
    with new(d) as led:
        led.step("e/warmup", lambda: {"achieved_rate": 10.0, "testbed_seconds": 1.0})
    _to_version_1(d / Ledger.FILENAME)
    _sqlite_file(d / Ledger.FILENAME, ["UPDATE steps SET data = '{}'"])
    with Ledger.open(d, "estimation", PARAMS, resume=True) as led:
        with pytest.raises(UserError, match=r"damaged at step 1 \('e/warmup'\): its data is incomplete "
                                            r"\(no 'achieved_rate'\)"):
            led.step("e/warmup", must_not_run, rerun=True, check=lambda r: float(r["achieved_rate"]))


def test_a_ledger_written_before_checksums_is_read_resumed_and_migrated(tmp_path):
    """Version 1 (no checksums): read and verified as unchecked, resumed with every step replayed; the
    resume adds the checksum column, and the rows it writes carry checksums."""
    from streambed.ledger import read_campaign, verify

    d = tmp_path / "camp"
    with new(d) as led:
        for i in range(3):
            led.step(f"m{i}", lambda i=i: {"value": i})
        led.set_result({"slots": 7})
    _to_version_1(d / Ledger.FILENAME)
    report = verify(d)
    assert report["intact"] and report["schema_version"] == 1 and report["unchecked"] == 4
    assert read_campaign(d).result == {"slots": 7}
    with Ledger.open(d, "estimation", PARAMS, resume=True) as led:
        assert [led.step(f"m{i}", must_not_run) for i in range(3)] == [{"value": i} for i in range(3)]
        led.step("m3", lambda: {"value": 3})
    report = verify(d)
    assert report["intact"] and report["schema_version"] == 2 and (report["steps"], report["unchecked"]) == (4, 4)
    _change_digit(d / Ledger.FILENAME, "steps", "key = 'm3'")  # the new row is checked
    assert verify(d)["damage"][0].startswith("damaged at step 4 ('m3')")


def test_truncation_and_a_damaged_header_are_worded_as_damage(tmp_path):
    from streambed.ledger import verify

    d = tmp_path / "camp"
    _filled(d, steps=300)
    path = d / Ledger.FILENAME
    whole = path.read_bytes()
    header = bytearray(whole)
    header[16:24] = b"\xff" * 8  # page size, format versions, reserved space: SQLite's header, not ours
    for damaged in (whole[: len(whole) // 3], bytes(header)):
        path.write_bytes(damaged)
        for read in (lambda: Ledger.open(d, "estimation", PARAMS, resume=True), lambda: verify(d)):
            with pytest.raises(UserError) as info:
                report = read()
                assert not report["intact"]  # verify may still count what survives
                raise UserError(report["damage"][0])
            message = str(info.value)
            assert "damaged" in message and "not a StreamBed ledger" not in message, message
            assert "\n" not in message


# ---------------------------------------------------------------------- refusals


def test_new_campaign_where_one_exists_is_refused(tmp_path):
    d = tmp_path / "camp"
    with new(d, kind="exploration") as led:
        led.step("m0", lambda: {"v": 1})
    with pytest.raises(UserError) as info:
        new(d, kind="estimation")
    assert str(info.value) == (
        f"campaign directory {d} already holds a exploration campaign; pass --resume to continue "
        f"it, or choose another --campaign-dir"
    )
    with Ledger.open(d, "exploration", PARAMS, resume=True) as led:  # untouched
        assert led.steps() == [("m0", {"v": 1})]


def test_resume_without_ledger_is_refused(tmp_path):
    for d in (tmp_path / "missing", tmp_path):  # neither a directory nor a ledger in it
        with pytest.raises(UserError) as info:
            Ledger.open(d, "estimation", PARAMS, resume=True)
        assert str(info.value) == f"--resume: no campaign in {d}"
    assert not (tmp_path / Ledger.FILENAME).exists()


def test_resume_with_another_kind_is_refused(tmp_path):
    d = tmp_path / "camp"
    new(d, kind="estimation").close()
    with pytest.raises(UserError) as info:
        Ledger.open(d, "validation", PARAMS, resume=True)
    assert str(info.value) == f"--resume: {d} holds a estimation campaign, not validation"


def test_resume_with_changed_param_names_it_and_both_values(tmp_path):
    d = tmp_path / "camp"
    new(d).close()
    # Same values after a JSON round trip are accepted.
    Ledger.open(d, "estimation", {"query": "q1", "rate": 2500000.0, "memory": 4096}, resume=True).close()
    with pytest.raises(UserError) as info:
        Ledger.open(d, "estimation", {**PARAMS, "rate": 3e6}, resume=True)
    assert str(info.value) == (
        f"--resume: the campaign in {d} was started with rate=2500000.0, got rate=3000000.0"
    )
    with pytest.raises(UserError, match=r"query='q1', got query='q2'"):
        Ledger.open(d, "estimation", {**PARAMS, "query": "q2"}, resume=True)
    with pytest.raises(UserError, match=r"started with slots=\(not set\), got slots=4"):
        Ledger.open(d, "estimation", {**PARAMS, "slots": 4}, resume=True)
    with pytest.raises(UserError, match=r"started with memory=4096, got memory=\(not set\)"):
        Ledger.open(d, "estimation", {"query": "q1", "rate": 2.5e6}, resume=True)


def test_resume_compares_params_after_json_round_trip(tmp_path):
    d = tmp_path / "camp"
    params = {"budget": (8, 4096), "rates": {"q1": 2.5e6}}
    new(d, params=params).close()
    # A tuple is stored as a list; the same tuple on resume must still match.
    with Ledger.open(d, "estimation", {"budget": (8, 4096), "rates": {"q1": 2500000.0}}, resume=True) as led:
        assert led.params == {"budget": [8, 4096], "rates": {"q1": 2.5e6}}
    with pytest.raises(UserError, match=r"started with budget=\[8, 4096\], got budget=\[8, 2048\]"):
        Ledger.open(d, "estimation", {**params, "budget": (8, 2048)}, resume=True)


def _sqlite_file(path: Path, statements: list[str]) -> None:
    conn = sqlite3.connect(path)
    for s in statements:
        conn.execute(s)
    conn.commit()
    conn.close()


@pytest.mark.parametrize("case", ["random-bytes", "empty", "other-sqlite", "other-schema-version"])
@pytest.mark.parametrize("resume", [True, False])
def test_foreign_or_corrupt_file_is_refused(tmp_path, case, resume):
    d = tmp_path / "camp"
    d.mkdir()
    path = d / Ledger.FILENAME
    expected = "is not a StreamBed ledger"
    if case == "random-bytes":
        path.write_bytes(os.urandom(4096))
    elif case == "empty":
        path.write_bytes(b"")
    elif case == "other-sqlite":
        _sqlite_file(path, ["CREATE TABLE meta (key TEXT, value TEXT)", "INSERT INTO meta VALUES ('a', 'b')"])
    else:
        new(d).close()
        _sqlite_file(path, ["UPDATE meta SET value = '99' WHERE key = 'schema_version'"])
        expected = "schema version 99"
    before = path.read_bytes()
    with pytest.raises(UserError, match=expected) as info:
        Ledger.open(d, "estimation", PARAMS, resume=resume)
    assert str(path) in str(info.value)
    assert path.read_bytes() == before  # a stranger's file is left exactly as it was


# ---------------------------------------------------------------------- kill -9 mid-campaign

CAMPAIGN_SCRIPT = """
import json, os, sys, time
from streambed.ledger import Ledger

campaign_dir, log, mode = sys.argv[1], sys.argv[2], sys.argv[3]

def measure(i):
    # The side effect is made durable first, so the log shows every execution, even a killed one.
    with open(log, "a") as f:
        f.write(f"m{i}\\n")
        f.flush()
        os.fsync(f.fileno())
    time.sleep(0.2)
    return {"value": i * i}

with Ledger.open(campaign_dir, "estimation", {"steps": 12}, resume=(mode == "resume")) as led:
    for i in range(12):
        led.step(f"m{i}", lambda i=i: measure(i))
    print(json.dumps({"replayed": led.replayed, "executed": led.executed}))
"""


def _lines(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_sigkill_mid_campaign_resumes_without_repeating_finished_steps(tmp_path):
    script = tmp_path / "campaign.py"
    script.write_text(CAMPAIGN_SCRIPT)
    campaign, log = tmp_path / "campaign", tmp_path / "executions.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(CONTROLLER), os.environ.get("PYTHONPATH")]))}

    proc = subprocess.Popen(
        [sys.executable, str(script), str(campaign), str(log), "new"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 8
        while len(_lines(log)) < 5:
            assert proc.poll() is None, f"campaign exited early: {proc.communicate()}"
            assert time.monotonic() < deadline, "campaign too slow to start"
            time.sleep(0.01)
        proc.kill()  # SIGKILL: no cleanup, no atexit, no close()
    finally:
        proc.kill()
        out, err = proc.communicate()
    assert proc.returncode == -9, (proc.returncode, err)
    killed_at = len(_lines(log))
    assert 5 <= killed_at < 12 and out == b""  # it really died mid-campaign

    done = subprocess.run(
        [sys.executable, str(script), str(campaign), str(log), "resume"],
        env=env, capture_output=True, text=True, timeout=30,
    )
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts["replayed"] >= 4
    assert counts["replayed"] + counts["executed"] == 12

    with Ledger.open(campaign, "estimation", {"steps": 12}, resume=True) as led:
        assert led.steps() == [(f"m{i}", {"value": i * i}) for i in range(12)]

    runs = Counter(_lines(log))
    assert set(runs) == {f"m{i}" for i in range(12)}
    assert max(runs.values()) <= 2
    twice = [k for k, n in runs.items() if n == 2]
    assert len(twice) <= 1, twice
    # Every execution is accounted for: the killed run's, then the resumed run's.
    assert sum(runs.values()) == killed_at + counts["executed"]


def test_a_ledger_killed_mid_commit_is_read_with_every_committed_step(tmp_path):
    """A writer killed inside a transaction leaves a hot rollback journal; reading the campaign (report,
    export, verify) rolls it back as a resume would, instead of failing on a read-only connection."""
    from streambed.ledger import read_campaign, verify

    d = tmp_path / "camp"
    _filled(d)
    db = d / Ledger.FILENAME
    # A second process starts a large write, spills it to the main file (cache of one page), and dies
    # without committing: what a kill -9 mid-commit leaves.
    script = (f"import os, sqlite3\nc = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
              "c.execute('PRAGMA cache_size=1'); c.execute('BEGIN IMMEDIATE')\n"
              "c.execute('CREATE TABLE junk(x)')\n"
              "c.executemany('INSERT INTO junk VALUES (?)', [('x' * 500,) for _ in range(2000)])\n"
              "os._exit(9)\n")
    subprocess.run([sys.executable, "-c", script], check=False, timeout=60)
    journal = db.with_name(db.name + "-journal")
    assert journal.is_file() and journal.stat().st_size > 0  # hot: the case a read-only open cannot handle
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute("SELECT COUNT(*) FROM steps").fetchall()
    record = read_campaign(d)
    assert record.kind == "estimation"
    report = verify(d)
    assert report["intact"] and report["steps"] == 300  # the uncommitted table is gone, every step stays


# ---------------------------------------------------------------------- damaged ledgers through the CLI

PLAN = ["plan", "--query", "paper-q11-linear", "--rate", "2e7", "--profiles", "512,4096", "--timing", "quick",
        "--campaign-dir", "p"]


@pytest.fixture(scope="module")
def plan_campaign(tmp_path_factory):
    """A finished plan campaign on the simulated testbed (about 10 s); each test damages a copy."""
    from clitools import json_result, streambed

    cwd = tmp_path_factory.mktemp("plan")
    json_result(streambed(*PLAN, "--json", cwd=cwd, timeout=180))
    return cwd / "p"


def _copy(campaign: Path, tmp_path: Path) -> Path:
    import shutil

    shutil.copytree(campaign, tmp_path / "p")
    return tmp_path / "p"


def test_cli_a_changed_digit_in_a_plan_is_refused_by_resume_and_reported_by_verify(plan_campaign, tmp_path):
    """One digit of one window's measurement: verify said whole, and the resumed plan planned other
    slots. Now both say where the ledger is damaged; --json still prints its document."""
    from clitools import error_line, streambed

    d = _copy(plan_campaign, tmp_path)
    _change_digit(d / Ledger.FILENAME, "steps", "key = 'co05/4096MB/32/w0'")
    line = error_line(streambed(*PLAN, "--resume", cwd=tmp_path, timeout=180))
    assert re.search(r"damaged at step \d+ \('co05/4096MB/32/w0'\)", line), line
    line = error_line(streambed("ledger", "verify", "--campaign-dir", "p", cwd=tmp_path))
    assert re.search(r"damaged at step \d+ \('co05/4096MB/32/w0'\).*Resume refuses it", line), line
    proc = streambed("ledger", "verify", "--campaign-dir", "p", "--json", cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    report = json.loads(proc.stdout)
    assert report["intact"] is False and "co05/4096MB/32/w0" in report["damage"][0]


def test_cli_a_step_without_its_data_is_damage_on_resume(plan_campaign, tmp_path):
    """A ledger written before checksums whose warm-up step holds {}: plan --resume crashed with
    KeyError: 'achieved_rate'. Now: one line, exit 2, naming the step and the missing field."""
    from clitools import error_line, streambed

    d = _copy(plan_campaign, tmp_path)
    _to_version_1(d / Ledger.FILENAME)
    _sqlite_file(d / Ledger.FILENAME, ["UPDATE steps SET data = '{}' WHERE key = 'single/4096MB/warmup'"])
    proc = streambed(*PLAN, "--resume", cwd=tmp_path, timeout=180)
    # the steps before it replay (with their progress lines) until the damaged one is read
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stdout == ""
    line = proc.stderr.strip().splitlines()[-1]
    assert re.search(r"^streambed: error: .*damaged at step \d+ \('single/4096MB/warmup'\): its data is incomplete "
                     r"\(no 'achieved_rate'\)", line), line
    assert not any(ln.startswith("written:") for ln in proc.stderr.splitlines())


def test_cli_a_ledger_written_before_checksums_resumes_to_the_same_plan(plan_campaign, tmp_path):
    from clitools import json_result, streambed

    d = _copy(plan_campaign, tmp_path)
    _to_version_1(d / Ledger.FILENAME)
    verified = streambed("ledger", "verify", "--campaign-dir", "p", cwd=tmp_path)
    assert verified.returncode == 0 and "written before checksums existed, unchecked" in verified.stderr
    original = json.loads((plan_campaign / "plan.json").read_text())
    resumed = json_result(streambed(*PLAN, "--resume", "--json", cwd=tmp_path, timeout=180))
    assert [e["slots"] for e in resumed["plan"]["entries"]] == [e["slots"] for e in original["entries"]]
    assert json_result(streambed("ledger", "verify", "--campaign-dir", "p", "--json", cwd=tmp_path))["schema_version"] == 2


@pytest.mark.parametrize("version", [1, 2])
def test_cli_export_of_an_incomplete_result_is_one_line(plan_campaign, tmp_path, version):
    """A result {"plan": 5}: KeyError: 'exploration' before; now damage, one line, exit 2 (a checksum
    mismatch in a current ledger, an incomplete result in one written before checksums)."""
    from clitools import error_line, streambed

    d = _copy(plan_campaign, tmp_path)
    if version == 1:
        _to_version_1(d / Ledger.FILENAME)
    _sqlite_file(d / Ledger.FILENAME, ["UPDATE result SET data = '{\"plan\": 5}'"])
    line = error_line(streambed("export", "--campaign-dir", "p", cwd=tmp_path))
    assert "damaged" in line and ("no 'exploration'" if version == 1 else "the result: its content does not match its checksum") in line, line


@pytest.mark.parametrize("case", ["random-512", "truncated", "header"])
def test_cli_a_damaged_file_is_one_line_everywhere_and_verify_json_prints_a_document(plan_campaign, tmp_path, case):
    from clitools import error_line, streambed

    d = _copy(plan_campaign, tmp_path)
    path = d / Ledger.FILENAME
    whole = path.read_bytes()
    if case == "random-512":
        path.write_bytes(os.urandom(512))
    elif case == "truncated":
        path.write_bytes(whole[: len(whole) // 2])
    else:
        path.write_bytes(whole[:16] + b"\xff" * 8 + whole[24:])
    for argv in (["ledger", "verify", "--campaign-dir", "p"], [*PLAN, "--resume"], ["export", "--campaign-dir", "p"],
                 ["fit", "--measurements", "p", "--rate", "1e6"]):
        line = error_line(streambed(*argv, cwd=tmp_path, columns=60, timeout=180))
        assert "damaged" in line, (argv, line)
    proc = streambed("ledger", "verify", "--campaign-dir", "p", "--json", cwd=tmp_path)
    assert proc.returncode == 2 and json.loads(proc.stdout)["intact"] is False
