"""Shared mechanics of the detectors: a regex proposes, a confirmer types and canonicalizes."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from pipelines.privacy.spans import INVALID, Span

Confirm = Callable[[str], "tuple[str, str] | None"]
"""A candidate's (type, canonical value), or None when it is not what the regex hoped."""

_GROUP = re.compile(r"[^\s\-]+")
_MAX_GROUPS = 10


def confirmed(
    regex: re.Pattern[str],
    text: str,
    confirm: Confirm,
    *,
    group: int = 0,
    haystack: str | None = None,
    windowed: bool = False,
    pos: int = 0,
    endpos: int | None = None,
) -> Iterator[Span]:
    """Spans of `regex` over `haystack` (default `text`), from `pos` to `endpos`, that `confirm`
    accepts.

    `windowed`: retry whole digit groups inside a failed candidate, because greedy runs swallow
    neighbouring numbers ("pedido 48213 612 345 678").
    """
    haystack = text if haystack is None else haystack
    for m in regex.finditer(haystack, pos, len(haystack) if endpos is None else endpos):
        start, end = m.span(group)
        if start < 0:
            continue
        verdict = confirm(text[start:end])
        if windowed:
            yield from best_of_windows(confirm, text, start, end, verdict)
        elif verdict is not None:
            yield Span(start, end, verdict[0], text[start:end], verdict[1])


def best_of_windows(
    confirm: Confirm, text: str, start: int, end: int, verdict: tuple[str, str] | None
) -> Iterator[Span]:
    """The candidate text[start:end] if it confirms as valid; else the valid runs of whole groups
    inside it ("4111 1111 1111 1111 612 345 678" is a card and a phone, not one invalid card); else
    the candidate itself when it is at least shaped right."""
    if verdict is not None and not verdict[0].endswith(INVALID):
        yield Span(start, end, verdict[0], text[start:end], verdict[1])
        return
    groups = [
        (g.start(), g.start() + len(_trimmed(g.group()))) for g in _GROUP.finditer(text, start, end)
    ]
    groups = [(a, b) for a, b in groups if b > a]
    if 1 < len(groups) <= _MAX_GROUPS:
        valid = list(_windows(_valid_only(confirm), text, groups, whole_tried=True))
        if valid:
            yield from valid
            return
    if verdict is not None:
        yield Span(start, end, verdict[0], text[start:end], verdict[1])


def _trimmed(group: str) -> str:
    """A group without the punctuation that ends a sentence around it: "678." or "678.)", not
    "(415)"."""
    while group and (group[-1] in ".,;:!?" or (group[-1] == ")" and "(" not in group)):
        group = group[:-1]
    return group


def _valid_only(confirm: Confirm) -> Confirm:
    def strict(value: str) -> tuple[str, str] | None:
        verdict = confirm(value)
        return verdict if verdict is not None and not verdict[0].endswith(INVALID) else None

    return strict


def _windows(
    confirm: Confirm, text: str, groups: list[tuple[int, int]], whole_tried: bool = False
) -> Iterator[Span]:
    """The longest, leftmost run of whole groups that confirms; then the same on either side."""
    for size in range(len(groups) - whole_tried, 0, -1):
        for i in range(len(groups) - size + 1):
            start, end = groups[i][0], groups[i + size - 1][1]
            verdict = confirm(text[start:end])
            if verdict is not None:
                yield Span(start, end, verdict[0], text[start:end], verdict[1])
                yield from _windows(confirm, text, groups[:i])
                yield from _windows(confirm, text, groups[i + size :])
                return


_HEX_GROUP_BEFORE = re.compile(r"(?<![\w])(?=[0-9A-Fa-f]{0,3}[A-Fa-f])[0-9A-Fa-f]{4} \Z")
_HEX_GROUP_AFTER = re.compile(r" (?=[0-9A-Fa-f]{0,3}[A-Fa-f])[0-9A-Fa-f]{4}(?!\w)")


_GROUP_BEFORE = re.compile(r"(?<![\w])[0-9A-Fa-f]{4} \Z")
_GROUP_AFTER = re.compile(r" [0-9A-Fa-f]{4}(?!\w)")


def among_hex_groups(text: str, start: int, end: int, *, letters: bool = True) -> bool:
    """Whether text[start:end] sits next to a group of four hex characters with a letter among them
    ("68C8 0230 4919 0278 6BEE"): digits of a key's fingerprint, not a number of anyone's. Without
    `letters`, any group of four will do: an IBAN never runs on into one."""
    before, after = (
        (_HEX_GROUP_BEFORE, _HEX_GROUP_AFTER) if letters else (_GROUP_BEFORE, _GROUP_AFTER)
    )
    return bool(before.search(text, max(0, start - 5), start) or after.match(text, end))


def hint(*literals: str) -> re.Pattern[str]:
    """A cheap literal search a text must pass before a costlier regex runs."""
    return re.compile("|".join(map(re.escape, literals)))
