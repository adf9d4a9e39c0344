"""Durable, resumable record of one campaign.

A campaign (estimation, exploration, validation) drives many slow measurements on a testbed. Each
finished measurement is a *step*: its result is committed to ``<campaign_dir>/ledger.sqlite`` before
the campaign moves on, so that a campaign killed at any point resumes (``--resume``) without repeating
the measurements it had finished. At most the one step in flight when the process died runs twice.

The ledger also keeps an append-only event log (run started, window discarded, ...) and the
campaign's final result.

One process writes a campaign at a time: ``Ledger.open`` holds an exclusive lock on
``<campaign_dir>/ledger.lock`` (flock, released by the kernel when the process dies, so a stale lock
is taken over) and a second process is refused with the holder's PID. Every commit lands in the
main file (a rollback journal, synchronous=FULL): nothing lives only in a side file that a copy or
a clean-up could lose, as it did in WAL mode. A damaged ledger is refused on resume and on read,
never replayed in part; :func:`verify` reports what survives (``streambed ledger verify``).
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .errors import UserError
from .files import fsync_dir as _fsync_dir

_APP = "streambed-ledger"
_SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- AUTOINCREMENT: seq never goes back, even across processes, so it is the completion order.
CREATE TABLE steps (
    seq  INTEGER PRIMARY KEY AUTOINCREMENT,
    key  TEXT NOT NULL UNIQUE,
    time REAL NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE events (
    seq  INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE result (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    time REAL NOT NULL,
    data TEXT NOT NULL
);
"""


class _Absent:
    """Stands for a parameter one of the two runs did not set (shown in the error message)."""

    def __repr__(self) -> str:
        return "(not set)"


_ABSENT = _Absent()


def _encode(what: str, data: Any) -> str:
    """JSON text of ``data``, which must be a dict; TypeError naming ``what`` otherwise."""
    if not isinstance(data, dict):
        raise TypeError(f"{what}: expected a dict, got {type(data).__name__}")
    try:
        return json.dumps(data)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what}: result is not JSON-serializable: {exc}") from exc


LOCKNAME = "ledger.lock"
"""The file in a campaign directory whose flock marks the one process writing the campaign."""


def _lock(d: Path) -> int:
    """An exclusive lock on ``d``'s campaign, held until the returned descriptor is closed (or the
    process dies: flock locks die with their holder, so a stale lock file is simply taken over).
    UserError naming the holder's PID when another process holds it."""
    path = d / LOCKNAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise UserError(f"--campaign-dir: cannot lock {d} ({exc.strerror or exc})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
        finally:
            os.close(fd)
        raise UserError(f"--campaign-dir: {d} is in use by process {holder}, which runs a campaign there; wait "
                        f"for it to end or choose another --campaign-dir") from None
    except OSError as exc:
        os.close(fd)
        raise UserError(f"--campaign-dir: cannot lock {d} ({exc.strerror or exc})") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _decode(path: Path, what: str, text: Any) -> dict:
    """A stored row's JSON object; UserError naming the row when it is not one (a damaged ledger)."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        raise UserError(f"{path}: damaged ledger: {what} is not JSON ({exc}); see streambed ledger verify") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: damaged ledger: {what} holds a {type(data).__name__}, not an object; "
                        f"see streambed ledger verify")
    return data


def _damage(conn: sqlite3.Connection) -> list[str]:
    """What SQLite's quick_check finds wrong with the file behind ``conn`` (empty: nothing)."""
    try:
        rows = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
    except sqlite3.DatabaseError as exc:
        return [str(exc)]
    return [] if rows == ["ok"] else rows


def _check_intact(conn: sqlite3.Connection, path: Path, *, rows: bool = False) -> None:
    """UserError when SQLite finds the file damaged or, with ``rows``, when a stored row does not decode:
    a resumed campaign replays all of its ledger or nothing."""
    problems = _damage(conn)
    if not problems and rows:
        problems = _unreadable(conn, path)[1]
    if problems:
        raise UserError(f"{path}: damaged ledger ({problems[0]}); nothing is replayed from it. streambed ledger "
                        f"verify --campaign-dir {path.parent} shows what survives")


@dataclass(frozen=True)
class CampaignRecord:
    """What a campaign's ledger holds, read without changing it (see :func:`read_campaign`)."""

    path: Path
    """The ledger file."""
    kind: str
    params: dict
    result: dict | None


def _roll_back_interrupted_write(db: Path) -> None:
    """A campaign killed mid-commit leaves a hot rollback journal beside its ledger; a read-only
    connection cannot roll it back and fails ("attempt to write a readonly database"). Rolling it
    back is what SQLite does on the next open for writing (a resume does it too): the interrupted
    step was never committed, every committed one stays. One read-write open does it, then the read
    is read-only as before."""
    journal = db.with_name(db.name + "-journal")
    if not journal.is_file() or journal.stat().st_size == 0:
        return
    try:
        conn = sqlite3.connect(db)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise UserError(f"{db}: the campaign was interrupted mid-write and its journal ({journal.name}) "
                        f"cannot be rolled back here ({exc}); resume the campaign where it can write") from None


def read_campaign(path: Path | str) -> CampaignRecord:
    """A campaign's ledger (``ledger.sqlite``, or the campaign directory holding it), read only: the
    public read API of the ledger for records and reports.

    Opened read-only rather than with ``Ledger.open(resume=True)``: that would demand the campaign's
    own parameters and set pragmas, and a record being read must not change. UserError naming the
    file when it is missing, not a ledger, or damaged.
    """
    p = Path(path)
    db = p / Ledger.FILENAME if p.is_dir() else p
    if not db.is_file():
        raise UserError(f"{path}: no campaign ledger ({Ledger.FILENAME}) there")
    _roll_back_interrupted_write(db)
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise UserError(f"{db}: cannot open the ledger ({exc})") from None
    try:
        kind, params = Ledger._read_meta(conn, db)  # one rule for app and schema version, here and on resume
        _check_intact(conn, db)
        row = conn.execute("SELECT data FROM result WHERE id = 1").fetchone()
    except sqlite3.Error as exc:
        raise UserError(f"{db}: damaged ledger ({exc})") from None
    finally:
        conn.close()
    return CampaignRecord(db, kind, params, None if row is None else _decode(db, "the result", row[0]))


class Ledger:
    """Durable record of one campaign: <campaign_dir>/ledger.sqlite (SQLite, rollback journal,
    synchronous=FULL), written by the one process holding <campaign_dir>/ledger.lock."""

    FILENAME = "ledger.sqlite"

    def __init__(self, conn: sqlite3.Connection, path: Path, kind: str, params: dict, lock: int | None) -> None:
        # Use Ledger.open(); the constructor only wraps an already validated connection and its lock.
        self._conn = conn
        self._lock = lock
        self._muted = False
        self.path = path
        self._kind = kind
        self._params = params
        self.replayed = 0
        self.executed = 0

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, campaign_dir: Path | str, kind: str, params: dict, *, resume: bool) -> "Ledger":
        """Start a new campaign in ``campaign_dir`` or, with ``resume``, continue the one there."""
        d = Path(campaign_dir)
        path = d / cls.FILENAME
        if not isinstance(params, dict):
            raise TypeError(f"params: expected a dict, got {type(params).__name__}")
        # Round trip so that the values compared on resume are the values stored (2.5e6 == 2500000.0,
        # tuples become lists, ...).
        params = json.loads(_encode("params", params))

        if resume:
            if not path.is_file():
                raise UserError(f"--resume: no campaign in {d}")
            lock = _lock(d)
            try:
                conn = cls._connect(path)
            except BaseException:
                os.close(lock)
                raise
            try:
                old_kind, old_params = cls._read_meta(conn, path)
                _check_intact(conn, path, rows=True)
                if old_kind != kind:
                    raise UserError(f"--resume: {d} holds a {old_kind} campaign, not {kind}")
                for key in [*old_params, *(k for k in params if k not in old_params)]:
                    old = old_params.get(key, _ABSENT)
                    new = params.get(key, _ABSENT)
                    if old != new:
                        raise UserError(
                            f"--resume: the campaign in {d} was started with {key}={old!r}, "
                            f"got {key}={new!r}"
                        )
                cls._set_pragmas(conn)
            except BaseException:
                conn.close()
                os.close(lock)
                raise
            return cls(conn, path, old_kind, old_params, lock)

        if d.exists() and not d.is_dir():
            raise UserError(f"--campaign-dir: {d} is a file, not a directory; choose another --campaign-dir")
        created_dir = not d.exists()
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"--campaign-dir: cannot create {d} ({exc.strerror or exc}"
                            f"{f': {exc.filename}' if exc.filename and str(exc.filename) != str(d) else ''})") from None
        # The lock comes before the look for an existing ledger: a second process that starts while
        # the first creates the file is told who holds the directory, not that the file is a stranger's.
        lock = _lock(d)
        try:
            if path.exists():
                cls._refuse_existing(d, path)
            return cls._create(d, path, kind, params, created_dir, lock)
        except (OSError, sqlite3.OperationalError) as exc:
            cls._release(lock, d if created_dir else None)
            what = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise UserError(f"--campaign-dir: cannot write the ledger {path} ({what})") from None
        except BaseException:
            cls._release(lock, d if created_dir else None)
            raise

    @staticmethod
    def _release(lock: int, created: Path | None) -> None:
        """Give up a lock taken by a failed open; remove the directory it created (and the lock file in it)."""
        os.close(lock)
        if created is not None:
            try:
                (created / LOCKNAME).unlink(missing_ok=True)
                created.rmdir()  # leave nothing behind; only works while the directory holds nothing else
            except OSError:
                pass

    @classmethod
    def _create(cls, d: Path, path: Path, kind: str, params: dict, created_dir: bool, lock: int) -> "Ledger":
        """A new ledger at ``path`` in the existing directory ``d``."""
        conn = cls._connect(path)
        try:
            cls._set_pragmas(conn)
            # IMMEDIATE takes the write lock first: if another process created the ledger between our
            # existence check and here, we see its schema and refuse instead of clobbering it.
            conn.execute("BEGIN IMMEDIATE")
            try:
                exists = conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
                ).fetchone()
                if exists is None:
                    # Statement by statement: executescript() would COMMIT our transaction first.
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    conn.executemany(
                        "INSERT INTO meta (key, value) VALUES (?, ?)",
                        [
                            ("app", _APP),
                            ("schema_version", str(_SCHEMA_VERSION)),
                            ("kind", kind),
                            ("params", json.dumps(params)),
                            ("created", repr(time.time())),
                        ],
                    )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            if exists is not None:
                conn.close()
                cls._refuse_existing(d, path)
        except BaseException:
            conn.close()
            raise
        _fsync_dir(d)
        if created_dir:
            _fsync_dir(d.parent)
        return cls(conn, path, kind, params, lock)

    @classmethod
    def _refuse_existing(cls, d: Path, path: Path) -> None:
        conn = cls._connect(path)
        try:
            old_kind, _ = cls._read_meta(conn, path)
        finally:
            conn.close()
        raise UserError(
            f"campaign directory {d} already holds a {old_kind} campaign; pass --resume to continue "
            f"it, or choose another --campaign-dir"
        )

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        # isolation_level=None: we issue BEGIN/COMMIT ourselves, so every write is committed when the
        # method that made it returns (the sqlite3 module's implicit transactions would not be).
        return sqlite3.connect(path, timeout=30.0, isolation_level=None)

    @staticmethod
    def _set_pragmas(conn: sqlite3.Connection) -> None:
        # Only called once the file is known to be ours (or new): journal_mode writes to the file, and
        # a stranger's file named ledger.sqlite must be left untouched. DELETE, not WAL: every commit
        # lands in the main file. In WAL mode a killed campaign's rows lived in ledger.sqlite-wal
        # only, so a deleted WAL lost them all and a truncated one replayed a prefix without a word.
        # Setting it also folds the WAL of a ledger written by an older StreamBed into the main file.
        conn.execute("PRAGMA journal_mode=DELETE")
        # FULL: each commit is on disk (journal and main file synced) before the campaign moves on.
        conn.execute("PRAGMA synchronous=FULL")

    @staticmethod
    def _read_meta(conn: sqlite3.Connection, path: Path) -> tuple[str, dict]:
        """Kind and params of the ledger behind ``conn``; UserError if it is not one we can read."""
        not_ours = f"{path} is not a StreamBed ledger; move it away or choose another --campaign-dir"
        try:
            has_meta = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
            ).fetchone()
            if has_meta is None:  # also the case of an empty file, which SQLite reads as empty db
                raise UserError(not_ours)
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as exc:  # not a database at all, or a damaged one
            raise UserError(f"{not_ours} ({exc})") from exc
        if meta.get("app") != _APP:
            raise UserError(not_ours)
        if meta.get("schema_version") != str(_SCHEMA_VERSION):
            raise UserError(
                f"{path} is a StreamBed ledger of schema version {meta.get('schema_version')}; "
                f"this StreamBed reads version {_SCHEMA_VERSION}"
            )
        try:
            kind = meta["kind"]
            params = json.loads(meta["params"])
        except (KeyError, ValueError) as exc:
            raise UserError(f"{path} is a damaged StreamBed ledger (meta: {exc})") from exc
        return kind, params

    # ------------------------------------------------------------------ campaign identity

    @property
    def kind(self) -> str:
        return self._kind

    @property
    def params(self) -> dict:
        # A copy: callers must not be able to change what the ledger believes it was started with.
        return json.loads(json.dumps(self._params))

    # ------------------------------------------------------------------ steps

    def step(self, key: str, fn: Callable[[], dict], *, rerun: bool = False) -> dict:
        """Return the stored result of step ``key``, or run ``fn``, commit its result and return it.
        ``rerun``: run ``fn`` for a stored step too, for its effect on a reproducible testbed, and still
        return the stored result (TestbedInfo.reproducible)."""
        if not isinstance(key, str):
            raise TypeError(f"step key must be a str, got {type(key).__name__}")
        row = self._conn.execute("SELECT data FROM steps WHERE key = ?", (key,)).fetchone()
        if row is not None:
            self.replayed += 1
            if rerun:
                self._muted = True  # its events were recorded when the step first ran
                try:
                    fn()
                finally:
                    self._muted = False
            return _decode(self.path, f"step {key!r}", row[0])
        # fn runs outside any transaction: measurements take minutes and must not hold the lock.
        data = _encode(f"step {key!r}", fn())
        self._write("INSERT INTO steps (key, time, data) VALUES (?, ?, ?)", (key, time.time(), data))
        self.executed += 1
        # Return the decoded stored value, not fn's object, so a live run and a replay see exactly
        # the same thing (JSON turns tuples into lists and int keys into strings).
        return json.loads(data)

    def has(self, key: str) -> bool:
        """Whether step ``key`` has completed."""
        return self._conn.execute("SELECT 1 FROM steps WHERE key = ?", (key,)).fetchone() is not None

    def steps(self, prefix: str = "") -> list[tuple[str, dict]]:
        """Completed steps whose key starts with ``prefix``, in completion order."""
        # substr rather than LIKE: step keys may contain '%' or '_'.
        rows = self._conn.execute(
            "SELECT key, data FROM steps WHERE substr(key, 1, length(?1)) = ?1 ORDER BY seq",
            (prefix,),
        ).fetchall()
        return [(key, _decode(self.path, f"step {key!r}", data)) for key, data in rows]

    # ------------------------------------------------------------------ events and result

    def record(self, kind: str, data: dict) -> None:
        """Append an event to the campaign's log (committed at once); nothing while a recorded step is
        re-run (``step(rerun=True)``), whose events the log already holds."""
        text = _encode(f"event {kind!r}", data)
        if self._muted:
            return
        self._write("INSERT INTO events (time, kind, data) VALUES (?, ?, ?)", (time.time(), kind, text))

    def events(self, kind: str | None = None) -> list[dict]:
        """Logged events (all, or those of ``kind``) in order: {"seq", "time", "kind", "data"}."""
        sql = "SELECT seq, time, kind, data FROM events"
        args: tuple = ()
        if kind is not None:
            sql += " WHERE kind = ?"
            args = (kind,)
        rows = self._conn.execute(sql + " ORDER BY seq", args).fetchall()
        return [{"seq": s, "time": t, "kind": k, "data": _decode(self.path, f"event {s}", x)} for s, t, k, x in rows]

    def set_result(self, data: dict) -> None:
        """Store the campaign's final result, replacing any previous one."""
        text = _encode("result", data)
        self._write("INSERT OR REPLACE INTO result (id, time, data) VALUES (1, ?, ?)", (time.time(), text))

    def _write(self, sql: str, args: tuple) -> None:
        """One committed write; a full disk or a file gone read-only is one line saying what is kept."""
        try:
            self._conn.execute(sql, args)
        except sqlite3.OperationalError as exc:
            raise UserError(f"{self.path}: cannot write the ledger ({exc}); every step before this one is "
                            f"kept: free the space, then continue with --resume") from None

    def result(self) -> dict | None:
        """The campaign's final result, or None if it has none yet."""
        row = self._conn.execute("SELECT data FROM result WHERE id = 1").fetchone()
        return None if row is None else _decode(self.path, "the result", row[0])

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        self._conn.close()
        if self._lock is not None:
            os.close(self._lock)  # the lock file stays: an unlocked one is taken over by the next open
            self._lock = None

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _readable(conn: sqlite3.Connection, path: Path, sql: str) -> tuple[int, list[str]]:
    """How many rows of ``sql`` (label, data) can be read and decoded, and the labels of those that cannot;
    reading stops at the first page SQLite cannot read."""
    good, bad = 0, []
    try:
        for label, data in conn.execute(sql):
            try:
                _decode(path, str(label), data)
                good += 1
            except UserError:
                bad.append(str(label))
    except sqlite3.DatabaseError as exc:
        bad.append(f"(rows after {good + len(bad)} unreadable: {exc})")
    return good, bad


def verify(campaign_dir: Path | str) -> dict:
    """What a campaign's ledger holds and whether all of it can be trusted, read without changing it:
    SQLite's integrity check, then every step, event and result decoded. ``intact`` is False when
    anything is wrong; the counts say what survives. UserError when there is no ledger of ours."""
    d = Path(campaign_dir)
    db = d / Ledger.FILENAME if d.is_dir() else d
    if not db.is_file():
        raise UserError(f"{campaign_dir}: no campaign ledger ({Ledger.FILENAME}) there")
    _roll_back_interrupted_write(db)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        kind, _ = Ledger._read_meta(conn, db)
        problems = _damage(conn)
        (steps, events, results), unreadable = _unreadable(conn, db)
    finally:
        conn.close()
    return {"path": str(db), "kind": kind, "intact": not problems and not unreadable, "problems": problems[:10],
            "steps": steps, "events": events, "result": bool(results), "unreadable": unreadable[:20]}


def _unreadable(conn: sqlite3.Connection, path: Path) -> tuple[tuple[int, int, int], list[str]]:
    """The steps, events and results that read back as JSON objects, and the labels of the rows that do not."""
    steps, bad_steps = _readable(conn, path, "SELECT 'step ' || quote(key), data FROM steps ORDER BY seq")
    events, bad_events = _readable(conn, path, "SELECT 'event ' || seq, data FROM events ORDER BY seq")
    results, bad_result = _readable(conn, path, "SELECT 'the result', data FROM result")
    return (steps, events, results), bad_steps + bad_events + bad_result
