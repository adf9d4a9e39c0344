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

Every row (step, event, result, and the campaign's parameters) carries the SHA-256 of its content,
written with it and checked on every read: SQLite's own checks see a changed page, not a changed
digit inside a stored number. Ledgers of schema version 1 (written before checksums) are read and
resumed as they are: their rows count as *unchecked*, a resume adds the column, and the rows it
writes from then on carry checksums (docs/records.md, "Checksums and damage").
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .errors import UserError
from .files import fsync_dir as _fsync_dir

_APP = "streambed-ledger"
_SCHEMA_VERSION = 2
_READABLE_VERSIONS = ("1", "2")
"""Version 1 is version 2 without the checksum columns; a resume migrates it (:meth:`Ledger._migrate`)."""
_CHECKED_TABLES = ("steps", "events", "result")
_SQLITE_MAGIC = b"SQLite format 3\x00"

_SCHEMA = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- AUTOINCREMENT: seq never goes back, even across processes, so it is the completion order.
-- checksum: _checksum() of the row's content, NULL only in rows a version-1 ledger held before a resume.
CREATE TABLE steps (
    seq  INTEGER PRIMARY KEY AUTOINCREMENT,
    key  TEXT NOT NULL UNIQUE,
    time REAL NOT NULL,
    data TEXT NOT NULL,
    checksum TEXT
);
CREATE TABLE events (
    seq  INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    checksum TEXT
);
CREATE TABLE result (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    time REAL NOT NULL,
    data TEXT NOT NULL,
    checksum TEXT
);
"""


def _checksum(table: str, name: str, when: float, data: str) -> str:
    """SHA-256 (hex) of one row's content: its table, its name (step key, event kind, 'result' or the
    campaign's kind), its time and its JSON text. Any changed character changes it."""
    text = json.dumps([table, name, repr(float(when)), data])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _one_line(text: object) -> str:
    """``text`` on one line: a message that quotes a damaged file must not spread over the terminal."""
    return " ".join(str(text).split())


class LedgerDamage(UserError):
    """A ledger of ours whose content cannot be trusted: refused whole, never replayed in part."""



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


def _row_problem(table: str, name: str, when: Any, text: Any, checksum: str | None) -> tuple[dict | None, str | None]:
    """A stored row's JSON object, or what is wrong with it: a checksum that does not match its
    content (None: a version-1 row, unchecked), text that is not JSON, JSON that is not an object."""
    if checksum is not None:
        try:
            ok = isinstance(text, str) and checksum == _checksum(table, name, when, text)
        except (TypeError, ValueError):  # a time that is no longer a number
            ok = False
        if not ok:
            return None, "its content does not match its checksum (changed after it was written)"
    try:
        data = json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        return None, f"not JSON ({_one_line(exc)})"
    if not isinstance(data, dict):
        return None, f"holds a {type(data).__name__}, not an object"
    return data, None


def _refuse(path: Path, where: str, problem: str) -> LedgerDamage:
    return LedgerDamage(f"{path}: damaged at {where}: {problem}; nothing is replayed from it. streambed ledger "
                        f"verify --campaign-dir {path.parent} shows what survives")


def _checked(path: Path, where: str, table: str, name: str, when: Any, text: Any, checksum: str | None) -> dict:
    """A stored row's JSON object; LedgerDamage naming the row (``where``) when it cannot be trusted."""
    data, problem = _row_problem(table, name, when, text, checksum)
    if problem is not None:
        raise _refuse(path, where, problem)
    return data


def _incomplete(exc: BaseException) -> str:
    """What a step reader found missing or wrong, in a few words."""
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r}" if exc.args else "a field is missing"
    return _one_line(exc)[:200]


def _checksum_column(conn: sqlite3.Connection, table: str) -> str:
    """``checksum``, or ``NULL`` for a table of a version-1 ledger, which has no such column."""
    columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})").fetchall()]
    return "checksum" if "checksum" in columns else "NULL"


def _damage(conn: sqlite3.Connection) -> list[str]:
    """What SQLite's quick_check finds wrong with the file behind ``conn`` (empty: nothing)."""
    try:
        rows = [_one_line(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
    except sqlite3.DatabaseError as exc:
        return [_one_line(exc)]
    return [] if rows == ["ok"] else rows


def _check_intact(conn: sqlite3.Connection, path: Path, *, rows: bool = False) -> None:
    """UserError when SQLite finds the file damaged or, with ``rows``, when a stored row does not decode:
    a resumed campaign replays all of its ledger or nothing."""
    problems = [f"damaged ledger (SQLite: {p})" for p in _damage(conn)]
    if not problems and rows:
        problems = _survey(conn, path).damage
    if problems:
        raise LedgerDamage(f"{path}: {problems[0]}; nothing is replayed from it. streambed ledger "
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
        _check_intact(conn, db, rows=True)  # a record is read whole or not at all, as a resume replays it
        row = conn.execute(f"SELECT time, data, {_checksum_column(conn, 'result')} FROM result WHERE id = 1").fetchone()
    except sqlite3.Error as exc:
        raise LedgerDamage(f"{db}: damaged ledger ({_one_line(exc)})") from None
    finally:
        conn.close()
    result = None if row is None else _checked(db, "the result", "result", "result", *row)
    return CampaignRecord(db, kind, params, result)


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
                cls._migrate(conn, path)
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
                    created, text = time.time(), json.dumps(params)
                    conn.executemany(
                        "INSERT INTO meta (key, value) VALUES (?, ?)",
                        [
                            ("app", _APP),
                            ("schema_version", str(_SCHEMA_VERSION)),
                            ("kind", kind),
                            ("params", text),
                            ("created", repr(created)),
                            ("checksum", _checksum("meta", kind, created, text)),
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
        """Kind and params of the ledger behind ``conn``; UserError if it is not one we can read,
        LedgerDamage (worded as damage) when it is ours, or looks like it, and cannot be read."""
        not_ours = f"{path} is not a StreamBed ledger; move it away or choose another --campaign-dir"
        try:
            with open(path, "rb") as fh:
                sqlite_header = fh.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
        except OSError:
            sqlite_header = True  # let SQLite say what is wrong
        damaged = f"{path}: damaged ledger"
        advice = "nothing is replayed from it; move it away or choose another --campaign-dir"
        try:
            has_meta = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
            ).fetchone()
            if has_meta is None:  # also the case of an empty file, which SQLite reads as empty db
                raise UserError(not_ours)
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as exc:  # not a database at all, or a damaged one
            if not sqlite_header:  # a stranger's file, or ours with its header overwritten: it cannot tell
                raise LedgerDamage(f"{path} is not a StreamBed ledger, or a damaged one: it does not start with "
                                   f"SQLite's header ({_one_line(exc)}); {advice}") from None
            raise LedgerDamage(f"{damaged} (SQLite: {_one_line(exc)}); {advice}") from None
        if meta.get("app") != _APP:
            raise UserError(not_ours)
        if meta.get("schema_version") not in _READABLE_VERSIONS:
            raise UserError(
                f"{path} is a StreamBed ledger of schema version {_one_line(meta.get('schema_version'))[:40]}; "
                f"this StreamBed reads versions {', '.join(_READABLE_VERSIONS)}"
            )
        try:
            kind = meta["kind"]
            params = json.loads(meta["params"])
            if "checksum" in meta and meta["checksum"] != _checksum("meta", kind, float(meta["created"]),
                                                                     meta["params"]):
                raise ValueError("the campaign's kind and parameters do not match their checksum")
            if not isinstance(params, dict):
                raise ValueError(f"the parameters hold a {type(params).__name__}, not an object")
        except (KeyError, ValueError, TypeError, RecursionError) as exc:
            what = f"no {exc.args[0]}" if isinstance(exc, KeyError) else _one_line(exc)
            raise LedgerDamage(f"{damaged} (meta: {what}); {advice}") from None
        return kind, params

    @staticmethod
    def _migrate(conn: sqlite3.Connection, path: Path) -> None:
        """A version-1 ledger (no checksums) made version 2 before a resume writes to it: the tables get
        their checksum column, the rows they hold keep NULL (unchecked: nothing can vouch for them now),
        and every row written from here on carries its checksum."""
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        if version == str(_SCHEMA_VERSION):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            for table in _CHECKED_TABLES:
                if _checksum_column(conn, table) == "NULL":
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN checksum TEXT")
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(_SCHEMA_VERSION),))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------------ campaign identity

    @property
    def kind(self) -> str:
        return self._kind

    @property
    def params(self) -> dict:
        # A copy: callers must not be able to change what the ledger believes it was started with.
        return json.loads(json.dumps(self._params))

    # ------------------------------------------------------------------ steps

    def step(self, key: str, fn: Callable[[], dict], *, rerun: bool = False,
             check: Callable[[dict], Any] | None = None) -> dict:
        """Return the stored result of step ``key``, or run ``fn``, commit its result and return it.
        ``rerun``: run ``fn`` for a stored step too, for its effect on a reproducible testbed, and still
        return the stored result (TestbedInfo.reproducible). ``check`` reads a stored result as its
        caller will: a KeyError, TypeError or ValueError there means the step's data is incomplete,
        and the ledger is refused as damaged (before ``fn`` re-runs) rather than failing later."""
        if not isinstance(key, str):
            raise TypeError(f"step key must be a str, got {type(key).__name__}")
        row = self._conn.execute(f"SELECT seq, time, data, {self._ck('steps')} FROM steps WHERE key = ?",
                                 (key,)).fetchone()
        if row is not None:
            where = self._step_name(row[0], key)
            stored = _checked(self.path, where, "steps", key, row[1], row[2], row[3])
            if check is not None:
                try:
                    check(stored)
                except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                    raise _refuse(self.path, where, f"its data is incomplete ({_incomplete(exc)})") from None
            self.replayed += 1
            if rerun:
                self._muted = True  # its events were recorded when the step first ran
                try:
                    fn()
                finally:
                    self._muted = False
            return stored
        # fn runs outside any transaction: measurements take minutes and must not hold the lock.
        data = _encode(f"step {key!r}", fn())
        now = time.time()
        self._write("INSERT INTO steps (key, time, data, checksum) VALUES (?, ?, ?, ?)",
                    (key, now, data, _checksum("steps", key, now, data)))
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
            f"SELECT seq, key, time, data, {self._ck('steps')} FROM steps WHERE substr(key, 1, length(?1)) = ?1 "
            f"ORDER BY seq", (prefix,),
        ).fetchall()
        return [(key, _checked(self.path, self._step_name(seq, key), "steps", key, when, data, ck))
                for seq, key, when, data, ck in rows]

    def _step_name(self, seq: int, key: str) -> str:
        """'step N ('key')': N counts the steps in completion order, as ``streambed ledger verify`` does."""
        n = self._conn.execute("SELECT count(*) FROM steps WHERE seq <= ?", (seq,)).fetchone()[0]
        return f"step {n} ({key!r})"

    def _ck(self, table: str) -> str:
        return _checksum_column(self._conn, table)

    # ------------------------------------------------------------------ events and result

    def record(self, kind: str, data: dict) -> None:
        """Append an event to the campaign's log (committed at once); nothing while a recorded step is
        re-run (``step(rerun=True)``), whose events the log already holds."""
        text = _encode(f"event {kind!r}", data)
        if self._muted:
            return
        now = time.time()
        self._write("INSERT INTO events (time, kind, data, checksum) VALUES (?, ?, ?, ?)",
                    (now, kind, text, _checksum("events", kind, now, text)))

    def events(self, kind: str | None = None) -> list[dict]:
        """Logged events (all, or those of ``kind``) in order: {"seq", "time", "kind", "data"}."""
        sql = f"SELECT seq, time, kind, data, {self._ck('events')} FROM events"
        args: tuple = ()
        if kind is not None:
            sql += " WHERE kind = ?"
            args = (kind,)
        rows = self._conn.execute(sql + " ORDER BY seq", args).fetchall()
        return [{"seq": s, "time": t, "kind": k, "data": _checked(self.path, f"event {s} ({k!r})", "events", k, t, x, c)}
                for s, t, k, x, c in rows]

    def set_result(self, data: dict) -> None:
        """Store the campaign's final result, replacing any previous one."""
        text = _encode("result", data)
        now = time.time()
        self._write("INSERT OR REPLACE INTO result (id, time, data, checksum) VALUES (1, ?, ?, ?)",
                    (now, text, _checksum("result", "result", now, text)))

    def _write(self, sql: str, args: tuple) -> None:
        """One committed write; a full disk or a file gone read-only is one line saying what is kept."""
        try:
            self._conn.execute(sql, args)
        except sqlite3.OperationalError as exc:
            raise UserError(f"{self.path}: cannot write the ledger ({exc}); every step before this one is "
                            f"kept: free the space, then continue with --resume") from None

    def result(self) -> dict | None:
        """The campaign's final result, or None if it has none yet."""
        row = self._conn.execute(f"SELECT time, data, {self._ck('result')} FROM result WHERE id = 1").fetchone()
        return None if row is None else _checked(self.path, "the result", "result", "result", *row)

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


@dataclass
class _Survey:
    """Every row of a ledger read back: how many of each kind can be trusted, what is wrong with the
    others (in file order, 'damaged at step N (...): ...'), and how many carry no checksum."""

    steps: int = 0
    events: int = 0
    results: int = 0
    damage: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    unchecked: int = 0


def _survey(conn: sqlite3.Connection, path: Path) -> _Survey:
    """Read every step, event and result back; reading a table stops at the first page SQLite cannot read."""
    out = _Survey()
    tables = (("steps", "step", f"SELECT key, time, data, {_checksum_column(conn, 'steps')} FROM steps ORDER BY seq"),
              ("events", "event", f"SELECT kind, time, data, {_checksum_column(conn, 'events')} FROM events ORDER BY seq"),
              ("result", "the result", f"SELECT 'result', time, data, {_checksum_column(conn, 'result')} FROM result"))
    for table, noun, sql in tables:
        n = 0
        try:
            for name, when, text, checksum in conn.execute(sql):
                n += 1
                label = noun if table == "result" else f"{noun} {n} ({name!r})"
                _, problem = _row_problem(table, name, when, text, checksum)
                if problem is not None:
                    out.damage.append(f"damaged at {label}: {problem}")
                    out.unreadable.append(label)
                    continue
                out.unchecked += checksum is None
                if table == "steps":
                    out.steps += 1
                elif table == "events":
                    out.events += 1
                else:
                    out.results += 1
        except sqlite3.DatabaseError as exc:
            out.damage.append(f"damaged ledger: {table} after row {n} unreadable (SQLite: {_one_line(exc)})")
            out.unreadable.append(f"({table} after row {n} unreadable)")
    return out


def verify(campaign_dir: Path | str) -> dict:
    """What a campaign's ledger holds and whether all of it can be trusted, read without changing it:
    SQLite's integrity check, then every step, event and result checked against its checksum and
    decoded. ``intact`` is False when anything is wrong (``damage`` says what and where, first first);
    the counts say what survives; ``unchecked`` counts the rows written before checksums existed
    (schema version 1), which nothing can vouch for. UserError when there is no ledger of ours;
    LedgerDamage when not even its header and parameters can be read."""
    d = Path(campaign_dir)
    db = d / Ledger.FILENAME if d.is_dir() else d
    if not db.is_file():
        raise UserError(f"{campaign_dir}: no campaign ledger ({Ledger.FILENAME}) there")
    _roll_back_interrupted_write(db)
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise UserError(f"{db}: cannot open the ledger ({_one_line(exc)})") from None
    try:
        kind, _ = Ledger._read_meta(conn, db)
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        problems = _damage(conn)
        survey = _survey(conn, db)
    except sqlite3.Error as exc:
        raise LedgerDamage(f"{db}: damaged ledger (SQLite: {_one_line(exc)})") from None
    finally:
        conn.close()
    damage = [f"damaged ledger (SQLite: {p})" for p in problems] + survey.damage
    return {"path": str(db), "kind": kind, "schema_version": int(version), "intact": not damage,
            "damage": damage[:20], "problems": problems[:10], "steps": survey.steps, "events": survey.events,
            "result": bool(survey.results), "unchecked": survey.unchecked, "unreadable": survey.unreadable[:20]}
