"""Files written for users, and files users give as input.

Written (plans, explorations, exports, plots): each appears whole or not at all. A file is written
under a temporary name in its own directory, synced, and renamed over the old one, so that a command
killed while writing never leaves half a plan.json for a user to act on.

Read (plans, records, profiles, inventories): regular files only, up to a size cap, so that a FIFO
given by mistake does not hang a command and a huge file does not exhaust memory.
"""

from __future__ import annotations

import os
import secrets
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import UserError


def fsync_dir(d: Path) -> None:
    """Make a new or renamed entry of ``d`` durable: the file's own fsync does not cover its name."""
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on directories; nothing more we can do
    finally:
        os.close(fd)


@contextmanager
def replacing(path: Path | str) -> Iterator[Path]:
    """A temporary path next to ``path`` (same extension, for writers that go by it); when the block
    ends without an error it replaces ``path`` in one rename, otherwise it is removed."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.{secrets.token_hex(4)}{path.suffix}")
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        # A full disk or a read-only directory: say which file could not be written, on one line.
        raise UserError(f"{path}: cannot write ({e.strerror or e}); the file is left as it was") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_text(path: Path | str, text: str) -> None:
    """``path`` holds ``text``, replaced whole (see :func:`replacing`)."""
    with replacing(path) as tmp:
        tmp.write_text(text)


MAX_INPUT_BYTES = 64 * 1024 * 1024
"""The largest file a user may give as input (plans, records, profiles, inventories): far above any
real one (a 1,000-measurement exploration.json is about 2 MB), far below what would exhaust memory."""


def read_input(path: Path | str, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a file a user named as input. Only a regular file is read: a FIFO or a device
    could block for ever or never end. UserError, starting with the path, otherwise; the caller
    puts its option in front."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{path}: is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{path}: not a regular file (a pipe, socket or device); expected a file")
    if st.st_size > max_bytes:
        raise UserError(f"{path}: {st.st_size:,} bytes, more than the {max_bytes:,} an input file may have")
    try:
        with open(p, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror or e})") from None
    if len(data) > max_bytes:  # grew since stat
        raise UserError(f"{path}: more than the {max_bytes:,} bytes an input file may have")
    return data


def read_input_text(path: Path | str, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """:func:`read_input` decoded as UTF-8 (a BOM is dropped); UserError when it is not UTF-8."""
    data = read_input(path, max_bytes)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
