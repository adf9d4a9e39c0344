"""Damage to the files StreamBed reads, drawn with Hypothesis so that a seed reproduces it.

Each function takes ``draw`` (Hypothesis' ``data.draw``) and a valid file's content, and returns
the content with one or a few things spoiled: a value replaced by an extreme number, a huge digit
string, a wrong type or a string with control characters; a key removed or added; deep nesting; a
YAML alias bomb; a truncation; random bytes. ``ledger`` damages a SQLite ledger in place.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any, Callable

import yaml
from hypothesis import strategies as st

Draw = Callable[[st.SearchStrategy], Any]

HUGE_DIGITS = "9" * 5000
"""More digits than Python converts to int by default (4300)."""
_HUGE = "@@HUGE@@"
"""Placeholder for a bare 5,000-digit number (json.dumps cannot write one)."""
_DEEP = "@@DEEP{}@@"
"""Placeholder for a list nested {} deep (json.dumps and yaml.dump recurse on it)."""

CONTROL = "\n\r\t\x0b\x0c\x1b\x7f\x08\u2028\u0085"

extreme_numbers = st.sampled_from([
    1e308, -1e308, 5e-324, -5e-324, 0, -0.0, -1, 1e19, -(2**63), 2**64, 1e300, float("inf"), float("-inf"),
    float("nan"), 0.5, 1e-300, 2**31, 10**30,
])
hostile_strings = st.one_of(
    st.sampled_from(["", " ", "yes", "no", "null", "~", "1e308", "nan", "-inf", HUGE_DIGITS, "x" * 100_000,
                     "q1\nq2", "a\x1b[31mred", "Calc#1\n", "../../../etc/passwd", "\u202eevil", "0x10", "1_000",
                     "١٢٣", "%s%n", "{}", "[]"]),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]) | st.sampled_from(list(CONTROL)),
            min_size=1, max_size=30),
)
wrong_types = st.sampled_from([None, True, False, [], {}, [1, 2], {"a": 1}, "5", "1e6", 5, 5.5])


def replacement(draw: Draw) -> Any:
    """A value to put where a valid one was."""
    how = draw(st.sampled_from(["number", "string", "type", "huge", "deep"]))
    if how == "number":
        return draw(extreme_numbers)
    if how == "string":
        return draw(hostile_strings)
    if how == "type":  # a copy: a later edit inside it must not change the strategy's own list or dict
        return copy.deepcopy(draw(wrong_types))
    if how == "huge":
        return _HUGE
    return _DEEP.format(draw(st.sampled_from([50, 900, 5000, 100_000])))


def _paths(tree: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a JSON/YAML tree, as a tuple of keys and indices."""
    found = [prefix]
    if isinstance(tree, dict):
        for k, v in tree.items():
            found += _paths(v, prefix + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree[:50]):
            found += _paths(v, prefix + (i,))
    return found


def _edit(tree: Any, path: tuple, how: str, value: Any) -> Any:
    if not path:
        return value if how != "delete" else {}
    parent = tree
    for k in path[:-1]:
        parent = parent[k]
    last = path[-1]
    if how == "delete":
        del parent[last]
    elif how == "add" and isinstance(parent, dict):
        parent[f"unknown_{len(parent)}"] = value
    else:
        parent[last] = value
    return tree


def tree(draw: Draw, data: Any) -> Any:
    """``data`` (parsed JSON or YAML) with one to three places changed."""
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(data)
        path = draw(st.sampled_from(paths))
        how = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if how == "delete" and not path:
            how = "replace"
        data = _edit(data, path, how, replacement(draw))
    return data


def _placeholders(text: str) -> str:
    """The placeholders of ``replacement`` as the text they stand for, quoted by JSON or YAML or not."""
    for depth in (50, 900, 5000, 100_000):
        for q in ('"', "'", ""):
            text = text.replace(f"{q}{_DEEP.format(depth)}{q}", "[" * depth + "1" + "]" * depth)
    for q in ('"', "'", ""):
        text = text.replace(f"{q}{_HUGE}{q}", HUGE_DIGITS)
    return text


def _dump_json(data: Any) -> str:
    return _placeholders(json.dumps(data, indent=1, allow_nan=True))


def raw(draw: Draw, content: bytes) -> bytes:
    """Damage at the byte level: truncation, a changed digit, random bytes, a BOM, nothing at all."""
    how = draw(st.sampled_from(["truncate", "digit", "bytes", "bom", "empty", "nul", "append"]))
    n = len(content)
    if how == "truncate" and n:
        return content[:draw(st.integers(0, n - 1))]
    if how == "digit":
        digits = [i for i, b in enumerate(content) if 48 <= b <= 57]
        if digits:
            i = draw(st.sampled_from(digits[:5000]))
            return content[:i] + bytes([48 + (content[i] - 47) % 10]) + content[i + 1:]
    if how == "bytes" and n:
        at = draw(st.integers(0, n - 1))
        junk = draw(st.binary(min_size=1, max_size=512))
        return content[:at] + junk + content[at + len(junk):]
    if how == "bom":
        return b"\xef\xbb\xbf" + content
    if how == "nul":
        return content.replace(b"\n", b"\x00\n", 3)
    if how == "append":
        return content + draw(st.binary(min_size=1, max_size=64))
    return b""


def json_file(draw: Draw, content: bytes) -> bytes:
    if draw(st.integers(0, 3)) == 0:
        return raw(draw, content)
    return _dump_json(tree(draw, json.loads(content))).encode("utf-8", "surrogatepass")


ALIAS_BOMB = ("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
              "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
              "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
              "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
              "i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]\n")


def yaml_file(draw: Draw, content: bytes) -> bytes:
    """A YAML file (a sim profile, an inventory's testbed.yml) damaged in its values or its syntax."""
    how = draw(st.sampled_from(["tree", "tree", "raw", "bomb", "keys", "deep", "tag", "anchor", "duplicate"]))
    text = content.decode()
    if how == "tree":
        data = yaml.safe_load(text)
        data = tree(draw, data)
        return _placeholders(yaml.safe_dump(data, allow_unicode=True, width=10**6)).encode("utf-8", "surrogatepass")
    if how == "raw":
        return raw(draw, content)
    if how == "bomb":  # the aliases where a value is expected (description:) or at the top level
        field = draw(st.sampled_from(["description", "name", "defaults", "operators", "max_slots"]))
        bomb = ALIAS_BOMB.replace("\n", "\n  ")
        return (f"{field}:\n  {bomb}\n" if draw(st.booleans()) else ALIAS_BOMB).encode() + \
            b"\n".join(line for line in content.splitlines() if not line.startswith(field.encode() + b":"))
    if how == "keys":
        n = draw(st.sampled_from([1000, 100_000, 400_000]))
        return content + "".join(f"\nk{i}: {i}" for i in range(n)).encode()
    if how == "deep":
        depth = draw(st.sampled_from([100, 1000, 50_000]))
        return content + f"\nextra: {'[' * depth}{']' * depth}\n".encode()
    if how == "tag":
        tag = draw(st.sampled_from(["!!python/object/apply:os.system ['true']", "!!binary AAAA", "!!set {a, b}",
                                    "!!timestamp 2001-12-14", "!custom x", "!!float .nan", "!!int 0x7f"]))
        key = draw(st.sampled_from(["description", "name", "noise", "max_slots", "rate"]))
        return content + f"\n{key}: {tag}\n".encode()
    if how == "anchor":  # an alias standing for a value elsewhere in the file
        return content.replace(b"operators:", b"operators: &ops", 1) + b"\nagain: *ops\n"
    return content + b"\n" + content  # every key twice


def csv_file(draw: Draw, content: bytes) -> bytes:
    """A CSV file (measurements, operator rates) with a cell, a column or a row spoiled."""
    if draw(st.integers(0, 3)) == 0:
        return raw(draw, content)
    import csv
    import io
    rows = list(csv.reader(io.StringIO(content.decode())))
    how = draw(st.sampled_from(["cell", "cell", "cell", "drop_column", "extra_column", "short_row", "header",
                                "many_rows"]))
    if how == "cell" and len(rows) > 1:
        r = draw(st.integers(1, len(rows) - 1))
        c = draw(st.integers(0, len(rows[r]) - 1))
        v = replacement(draw)
        rows[r][c] = _placeholders(json.dumps(v) if isinstance(v, (list, dict)) else str(v))
    elif how == "drop_column" and rows:
        c = draw(st.integers(0, len(rows[0]) - 1))
        rows = [row[:c] + row[c + 1:] for row in rows]
    elif how == "extra_column":
        rows = [row + [draw(hostile_strings)] for row in rows]
    elif how == "short_row" and len(rows) > 1:
        rows[-1] = rows[-1][:len(rows[-1]) // 2]
    elif how == "header" and rows:
        rows.insert(1, rows[0])
    elif how == "many_rows" and len(rows) > 1:
        rows += rows[1:] * draw(st.sampled_from([100, 20_000]))
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode("utf-8", "surrogatepass")


def ledger(draw: Draw, path: Path) -> str:
    """Damage the ledger at ``path`` in place; returns what was done (for the report of a failure)."""
    how = draw(st.sampled_from(["row_digit", "row_digit", "row_truncate", "row_bytes", "row_field", "row_tree",
                                "row_delete", "meta", "file_truncate", "file_bytes", "file_header", "journal"]))
    if how.startswith("file") or how == "journal":
        content = path.read_bytes()
        if how == "file_truncate":
            cut = draw(st.integers(0, len(content) - 1))
            path.write_bytes(content[:cut])
            return f"file truncated to {cut} bytes"
        if how == "file_header":
            at = draw(st.integers(0, 99))
            path.write_bytes(content[:at] + b"\xff" + content[at + 1:])
            return f"header byte {at} set to 0xff"
        if how == "journal":
            path.with_name(path.name + "-journal").write_bytes(draw(st.binary(min_size=0, max_size=2048)))
            return "a -journal file of random bytes beside it"
        at = draw(st.integers(0, len(content) - 1))
        junk = draw(st.binary(min_size=1, max_size=512))
        path.write_bytes(content[:at] + junk + content[at + len(junk):])
        return f"{len(junk)} random bytes at offset {at}"
    con = sqlite3.connect(path)
    try:
        table = "meta" if how == "meta" else draw(st.sampled_from(["steps", "steps", "result", "events"]))
        column = "value" if table == "meta" else "data"
        key = "key" if table == "meta" else ("id" if table == "result" else "seq")
        rows = con.execute(f"SELECT {key}, {column} FROM {table}").fetchall()
        if not rows:
            return f"{table} is empty: nothing damaged"
        row_key, value = draw(st.sampled_from(rows))
        where = f"{table} row {row_key!r}"
        if how == "row_delete":
            con.execute(f"DELETE FROM {table} WHERE {key} = ?", (row_key,))
            done = f"{where} deleted"
        else:
            if how in ("row_digit", "meta"):
                new = raw(draw, value.encode()).decode("utf-8", "replace") if how == "meta" else None
                if new is None:
                    digits = [i for i, ch in enumerate(value) if ch.isdigit()]
                    if not digits:
                        return f"{where} has no digit"
                    i = draw(st.sampled_from(digits))
                    new = value[:i] + str((int(value[i]) + 1) % 10) + value[i + 1:]
            elif how == "row_truncate":
                new = value[:draw(st.integers(0, max(0, len(value) - 1)))]
            elif how == "row_bytes":
                new = draw(st.binary(min_size=1, max_size=256))
            else:
                try:
                    data = json.loads(value)
                except ValueError:
                    data = value
                if how == "row_field" and isinstance(data, dict) and data:
                    victim = draw(st.sampled_from(sorted(data)))
                    if isinstance(data[victim], dict) and data[victim] and draw(st.booleans()):
                        del data[victim][draw(st.sampled_from(sorted(data[victim])))]
                    else:
                        del data[victim]
                else:
                    data = tree(draw, data)
                new = _dump_json(data)
            con.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = ?", (new, row_key))
            done = f"{where} {how}: {str(new)[:120]!r}"
        con.commit()
        return done
    finally:
        con.close()
