"""checks.py: the one rule per kind of outside value (options, record files, plan files, sim profiles)."""

import math

import pytest

from streambed import checks


@pytest.mark.parametrize("value, kw, expected", [
    (2.5, {}, 2.5),
    (0, {}, 0.0),
    ("2.5e6", {"text": True}, 2.5e6),
    (" 7 ", {"text": True}, 7.0),
    (3, {"minimum": 0.0, "strict": True}, 3.0),
    (-1.0, {"minimum": None}, -1.0),
    (math.inf, {"allow_inf": True}, math.inf),
])
def test_numbers_that_pass(value, kw, expected):
    assert checks.number(value, **kw) == expected


@pytest.mark.parametrize("value, kw, fragment", [
    (True, {}, "expected a number >= 0, got True"),
    ("2.5", {}, "got '2.5'"),                      # text only where text=True (YAML and JSON give numbers)
    ("fast", {"text": True}, "got 'fast'"),
    (0, {"strict": True}, "a number > 0, got 0"),
    (-5, {}, "a number >= 0, got -5"),
    (math.nan, {}, "finite"),
    (math.inf, {}, "finite"),
    (10 ** 400, {}, "too large for a float"),
    (None, {}, "got None"),
    (1.0, {"minimum": 2.0, "unit": "MB"}, "a number >= 2 (MB), got 1.0"),
])
def test_numbers_that_fail_say_what_was_expected(value, kw, fragment):
    with pytest.raises(checks.Invalid) as e:
        checks.number(value, **kw)
    assert fragment in str(e.value)


@pytest.mark.parametrize("value, kw, expected", [
    (4, {}, 4),
    (4.0, {}, 4),                  # JSON and CSV write whole numbers so
    ("4", {"text": True}, 4),
    ("4.0", {"text": True}, 4),
    (0, {"minimum": 0}, 0),
])
def test_integers_that_pass(value, kw, expected):
    assert checks.integer(value, **kw) == expected


@pytest.mark.parametrize("value, kw", [
    (0, {}),
    (True, {}),
    (4.5, {}),
    (4.0, {"whole_floats": False}),            # a YAML float where an integer is meant
    ("4.0", {"text": True, "whole_floats": False}),
    ("1e3", {"text": True, "whole_floats": False}),
    ("four", {"text": True}),
    ("4", {}),
    (math.inf, {}),
])
def test_integers_that_fail(value, kw):
    with pytest.raises(checks.Invalid, match="an integer >= "):
        checks.integer(value, **kw)


def test_number_text():
    assert checks.is_number_text("1e6") and checks.is_number_text(" 2.5 ")
    assert not checks.is_number_text("1e") and not checks.is_number_text("q1")


@pytest.mark.parametrize("value", ["Calc#1", "Sink #2", "Überoperator", "a" * 200])
def test_names_that_pass(value):
    assert checks.name(value) == value


@pytest.mark.parametrize("value, fragment", [
    ("Calc\n#1", "control character"),
    ("Calc\t1", "control character"),
    ("x\x00", "control character"),
    ("", "non-empty"),
    ("a" * 201, "at most 200"),
    (5, "text"),
    (None, "text"),
])
def test_names_that_fail(value, fragment):
    with pytest.raises(checks.Invalid, match=fragment):
        checks.name(value)


def test_booleans_are_booleans():
    assert checks.boolean(True) is True and checks.boolean(False) is False
    for v in ("yes", "true", 1, 0, None):
        with pytest.raises(checks.Invalid, match="true or false"):
            checks.boolean(v)


def test_integers_have_a_digit_limit():
    with pytest.raises(checks.Invalid, match="digits"):
        checks.integer(10 ** 40)
    with pytest.raises(checks.Invalid, match="digits"):
        checks.integer("9" * 5000, text=True)


def test_numbers_have_an_upper_bound_when_asked():
    assert checks.number(1e3, maximum=1e3) == 1e3
    with pytest.raises(checks.Invalid, match="<= 1000"):
        checks.number(1e308, maximum=1e3)


def test_shown_escapes_control_characters_on_one_line():
    assert checks.shown("a\nb.yaml") == "a\\nb.yaml"
    assert checks.shown("plain/path.yaml") == "plain/path.yaml"
    assert "\n" not in checks.shown("x\r\n\x1b[31m")
