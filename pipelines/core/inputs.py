"""What a person or a DAG run may hand ragwatch: one check per kind of value, used by every entry
point.

The CLI (typer callbacks), the DAG `Param`s (the JSON-schema patterns below), the settings and the
steps themselves call these, so a value refused in one place is refused everywhere. Names become
path components and Prometheus labels: they are checked against a pattern, never cleaned up, so a
hostile value fails loudly instead of landing somewhere unexpected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date

GOLDEN_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
"""A golden set's name: one path component and part of a git tag (no dots, no slashes)."""
TARGET_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@+-]{0,127}$"
"""A system under test's name: part of a run id, a file name and a metric label (no slashes)."""
REPORT_NAME_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}_[A-Za-z0-9][A-Za-z0-9_.:@+-]{0,127}$"
"""A report's file stem: `<day>_<target>`."""
DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
GOLDEN_VERSION_PATTERN = r"^v[0-9]{1,6}$"
STRATA = ("app", "language", "user_feedback", "model")
"""Trace fields a sample may be stratified by: short categorical values, never free text, because
the partition's manifest (published and versioned) lists every stratum's values."""
SUITES = ("offline", "online")
K_MAX = 100


class InvalidInput(ValueError):
    """A value a person gave is not allowed; the message names the kind and what is allowed."""


def _matches(kind: str, pattern: str, value: object, allowed: str) -> str:
    if not isinstance(value, str) or not re.fullmatch(pattern, value):
        raise InvalidInput(f"{kind} {_shown(value)} is not allowed: {allowed}")
    return value


def _shown(value: object) -> str:
    return repr(value)[:80]


def golden_name(value: object) -> str:
    """A golden set name: letters, digits, `_` and `-`, at most 64, starting with a letter or
    digit."""
    return _matches(
        "golden-set name",
        GOLDEN_NAME_PATTERN,
        value,
        "use letters, digits, '_' and '-' (at most 64, no dots or slashes)",
    )


def target_name(value: object) -> str:
    """A target name: letters, digits and `_ . : @ + -`, at most 128, never a path."""
    name = _matches(
        "target name",
        TARGET_NAME_PATTERN,
        value,
        "use letters, digits and '_.:@+-' (at most 128, no slashes or spaces)",
    )
    if ".." in name:
        raise InvalidInput(f"target name {_shown(value)} is not allowed: no '..'")
    return name


def report_name(value: object) -> str:
    """A report's file stem `<day>_<target>`."""
    name = _matches("report name", REPORT_NAME_PATTERN, value, "it is <YYYY-MM-DD>_<target name>")
    day(name[:10])
    target_name(name[11:])
    return name


def day(value: object) -> date:
    """A calendar day given as `YYYY-MM-DD` (or a date)."""
    if isinstance(value, date):
        return value
    text = _matches("date", DATE_PATTERN, value, "use YYYY-MM-DD")
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"date {_shown(value)} is not a calendar day") from None


def golden_version(value: object) -> str:
    return _matches("golden-set version", GOLDEN_VERSION_PATTERN, value, "use vN, e.g. v3")


def suite(value: object) -> str:
    if value not in SUITES:
        raise InvalidInput(f"suite {_shown(value)} is not allowed: choose from {list(SUITES)}")
    return value  # type: ignore[return-value]


def strata(value: str | Iterable[str]) -> list[str]:
    """Strata keys, as a list or comma-separated text: known trace fields, each once, at least
    one."""
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else list(value)
    if not names or any(not isinstance(n, str) for n in names):
        raise InvalidInput(
            f"strata {_shown(value)} are not allowed: give at least one of {list(STRATA)}"
        )
    unknown = [n for n in names if n not in STRATA]
    if unknown:
        raise InvalidInput(
            f"unknown strata {[n[:40] for n in unknown]}; choose from {list(STRATA)} "
            "(free-text fields would be published in the manifest)"
        )
    if len(set(names)) != len(names):
        raise InvalidInput(f"strata {names} name a field twice")
    return names


def cutoffs(value: str | Iterable[int]) -> list[int]:
    """Cut-offs k of recall@k and precision@k, as a list or comma-separated text: 1..100, at least
    one."""
    try:
        ks = (
            [int(v) for v in value.split(",") if v.strip()]
            if isinstance(value, str)
            else [_integer(v) for v in value]
        )
    except (TypeError, ValueError):
        raise InvalidInput(f"cut-offs k {_shown(value)} are not whole numbers") from None
    if not ks or any(not 1 <= k <= K_MAX for k in ks):
        raise InvalidInput(
            f"cut-offs k {_shown(value)} are not allowed: give numbers from 1 to {K_MAX}"
        )
    return sorted(set(ks))


def _integer(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(value)
    return value
