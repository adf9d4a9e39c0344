"""Files written for users, and files users give as input.

Written (plans, explorations, exports, plots, reports): each appears whole or not at all. A file is
written under a temporary name in its own directory, synced, and renamed over the old one, so that a
command killed while writing never leaves half a plan.json for a user to act on. Only a regular file
(or nothing) is replaced: a device, FIFO, socket, directory or symbolic link at the target is refused,
so that ``--out /dev/full`` run as root does not turn a device node into an HTML page, and a link
never leads the write out of the directory the user named.

Read (plans, records, profiles, inventories): regular files only, up to a size cap, so that a FIFO
given by mistake does not hang a command and a huge file does not exhaust memory. JSON and YAML are
parsed with bounds of their own (integer digits, nesting, YAML nodes after alias expansion).
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .checks import MAX_DIGITS, shown
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


def check_target(path: Path | str) -> Path:
    """``path`` as a place to write a file: absent, or a regular file (not a link to one). UserError,
    starting with the path, otherwise. Commands call it before their work, so that a wrong ``--out``
    is refused at once; :func:`replacing` calls it again before it renames."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path
    except OSError as e:
        raise UserError(f"{shown(path)}: cannot write ({e.strerror or e})") from None
    if stat.S_ISLNK(st.st_mode):
        raise UserError(f"{shown(path)}: is a symbolic link; refusing to write through it (give the path of "
                        f"a regular file, or remove the link)")
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{shown(path)}: is a directory; expected a file to write")
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{shown(path)}: not a regular file (a pipe, socket or device); refusing to replace it")
    return path


@contextmanager
def replacing(path: Path | str) -> Iterator[Path]:
    """A temporary path next to ``path`` (same extension, for writers that go by it); when the block
    ends without an error it replaces ``path`` in one rename, otherwise it is removed. ``path`` must
    be absent or a regular file (:func:`check_target`), before and at the rename."""
    path = check_target(path)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.{secrets.token_hex(4)}{path.suffix}")
    try:
        # Created here, exclusively and without following links: writers then open a file that is ours.
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666))
    except OSError as e:
        raise UserError(f"{shown(path)}: cannot write ({e.strerror or e}); the file is left as it was") from None
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        check_target(path)  # something else may have been put there while we wrote
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        # A full disk or a read-only directory: say which file could not be written, on one line.
        raise UserError(f"{shown(path)}: cannot write ({e.strerror or e}); the file is left as it was") from None
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


MAX_NESTING = 100
"""The deepest nesting of lists and mappings in a JSON or YAML input: real files nest a few levels."""

MAX_YAML_BYTES = 1024 * 1024
"""The largest YAML input (profiles, inventory settings): a shipped profile is about 1 KB, and parsing
a megabyte of YAML takes about a second, where the 64 MB input cap would take minutes."""

MAX_YAML_NODES = 50_000
"""The most YAML nodes (scalars, lists, mappings) a file may hold, counting each alias as the nodes it
stands for: an alias bomb of a few hundred bytes expands to billions."""


def load_json(text: str, origin: str) -> object:
    """JSON ``text`` of the input ``origin``, with integers of at most MAX_DIGITS digits; UserError
    naming ``origin`` (bad JSON, a huge integer, nesting beyond what a parser's stack takes)."""
    def integer(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_DIGITS:
            raise _TooLong(f"{origin}: an integer of {len(digits.lstrip('-')):,} digits; at most {MAX_DIGITS}")
        return int(digits)

    try:
        return json.loads(text, parse_int=integer)
    except _TooLong as e:
        raise UserError(str(e)) from None
    except json.JSONDecodeError as e:
        raise UserError(f"{origin}: not valid JSON ({e.msg}, line {e.lineno})") from None
    except RecursionError:
        raise UserError(f"{origin}: JSON nested too deeply (more than a parser's stack takes)") from None


class _TooLong(ValueError):
    pass


def load_yaml(text: str, origin: str) -> object:
    """YAML ``text`` of the input ``origin`` (safe types only, a key repeated in one mapping refused),
    within MAX_YAML_BYTES, MAX_NESTING and MAX_YAML_NODES (aliases expanded). The nodes are counted
    before any Python object is built, so a bomb costs the parse of its few bytes; UserError naming
    ``origin`` otherwise."""
    import yaml

    if len(text) > MAX_YAML_BYTES:
        raise UserError(f"{origin}: {len(text):,} characters, more than the {MAX_YAML_BYTES:,} a YAML input may have")
    loader = None
    try:
        loader = _yaml_loader()(text)  # its reader refuses unprintable characters already here
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(node, origin)
        return loader.construct_document(node)
    except _YamlBound as e:
        raise UserError(f"{origin}: {e}") from None
    except RecursionError:
        raise UserError(f"{origin}: YAML nested too deeply (more than {MAX_NESTING} levels)") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f": line {mark.line + 1}" if mark is not None else ""
        problem = " ".join(str(getattr(e, "problem", None) or e).split())
        raise UserError(f"{origin}{where}: not valid YAML ({shown(problem)})") from None
    finally:
        if loader is not None:
            loader.dispose()


_YAML_INT = "tag:yaml.org,2002:int"


def _check_nodes(root, origin: str) -> None:
    """Count ``root``'s nodes with aliases expanded (a shared node counts once per use) and its depth,
    refusing beyond the bounds as soon as the running count passes them; iterative and memoized, so
    the count costs at most MAX_YAML_NODES steps plus one per alias. An integer of more than MAX_DIGITS
    digits is refused here too: Python refuses to convert one of over 4,300."""
    import yaml

    size: dict[int, int] = {}  # expanded node count of each finished node
    counted = 0  # expanded nodes met so far; every node is inside the root, so this bounds the root's count
    stack: list[tuple[object, int, bool]] = [(root, 1, False)]
    on_path: set[int] = set()
    while stack:
        node, level, done = stack.pop()
        key = id(node)
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = ()
            if node.tag == _YAML_INT and len(node.value.lstrip("+-").replace("_", "")) > MAX_DIGITS:
                raise UserError(f"{origin}: an integer of {len(node.value):,} characters; at most {MAX_DIGITS} digits")
        if done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in children)
            continue
        if key in size:  # an alias of a finished node: it repeats all of that node's values
            counted += size[key]
        elif key in on_path:  # a recursive alias: infinitely many values
            raise UserError(f"{origin}: a YAML alias that contains itself; not a file StreamBed reads")
        else:
            counted += 1
            if level > MAX_NESTING:
                raise UserError(f"{origin}: YAML nested too deeply (more than {MAX_NESTING} levels)")
            on_path.add(key)
            stack.append((node, level, True))
            stack.extend((c, level + 1, False) for c in children)
        if counted > MAX_YAML_NODES:
            raise UserError(f"{origin}: more than {MAX_YAML_NODES:,} YAML values (aliases counted as what they "
                            f"repeat); not a file StreamBed reads")


def _yaml_loader():
    """PyYAML's safe loader (the pure-Python one: libyaml's composer recurses in C and crashes the
    process on deep nesting), composing at most MAX_YAML_NODES nodes, MAX_NESTING deep, so that a
    huge or deep file stops early; and a key repeated in one mapping is an error (YAML requires
    unique keys; PyYAML keeps the last one)."""
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        _composed = 0
        _depth = 0

        def compose_node(self, parent, index):
            self._composed += 1
            self._depth += 1
            try:
                if self._depth > MAX_NESTING:
                    raise _YamlBound(f"YAML nested too deeply (more than {MAX_NESTING} levels)")
                if self._composed > MAX_YAML_NODES:
                    raise _YamlBound(f"more than {MAX_YAML_NODES:,} YAML values (aliases counted as what they "
                                     f"repeat); not a file StreamBed reads")
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen = set()
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        duplicate = key in seen
                        seen.add(key)
                    except TypeError:  # unhashable: the base class reports it
                        continue
                    if duplicate:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"duplicate key {shown(repr(key))[:60]}", key_node.start_mark)
            return super().construct_mapping(node, deep)

    return BoundedLoader


class _YamlBound(Exception):
    """A YAML input passed a bound while it was composed."""
