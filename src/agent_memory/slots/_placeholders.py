"""Memory placeholders in code and commands: ``[memory:KEY]``, ``[memory:KEY:full]``,
``[memory:KEY:summary]`` and ``[memory:KEY:meta:FIELD]``.

>>> [p.key for p in parse_placeholders("用 [memory:db-config-001] 连接，端口 [memory:db-config-001:meta:port]")]
['db-config-001', 'db-config-001']
>>> resolve("host=[memory:k:meta:host]", {"k": SlotValue("k", "s", "c", {"host": "db1"})}).text
'host=db1'

Anything that starts like a placeholder (``[memory:``) but does not follow the grammar is an error
that says where, never a silent ``[ERROR ...]`` string inside a command.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..text import neutralize

Format = Literal["default", "full", "summary", "meta"]

#: A key is what ``memory_key`` allows: letters (any script), digits, "_" and "-".
PLACEHOLDER = re.compile(r"\[memory:(?P<key>[\w-]{1,255})(?::(?P<format>full|summary|meta:(?P<field>[\w-]{1,100})))?\]")
_START = re.compile(r"\[memory:", re.IGNORECASE)


class PlaceholderError(ValueError):
    """A placeholder is malformed, or names a memory or field that is not available."""


@dataclass(frozen=True, slots=True)
class Placeholder:
    """One placeholder found in a text; ``start``/``end`` index the original text."""

    key: str
    format: Format
    field: str | None
    raw: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class SlotValue:
    """A memory as placeholders see it."""

    key: str
    summary: str
    content: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    memory_type: str = "general"

    def value(self) -> Any:
        """The content, JSON-decoded when it is a JSON object or array (else the text)."""
        text = self.content.strip()
        if text[:1] in "{[":
            try:
                return json.loads(text)
            except ValueError:
                return self.content
        return self.content


@dataclass(frozen=True, slots=True)
class Resolution:
    """A resolved text and, per placeholder, where its replacement now sits (``start``, ``end``)."""

    text: str
    spans: tuple[tuple[Placeholder, int, int], ...]


def parse_placeholders(text: str) -> list[Placeholder]:
    """Every placeholder in ``text``, in order. Raises :class:`PlaceholderError` for a malformed one."""
    found: list[Placeholder] = []
    for start_match in _START.finditer(text):
        start = start_match.start()
        match = PLACEHOLDER.match(text, start)
        if match is None:
            snippet = text[start : start + 40]
            raise PlaceholderError(
                f"malformed memory placeholder at position {start}: {snippet!r}; use [memory:KEY], "
                "[memory:KEY:full], [memory:KEY:summary] or [memory:KEY:meta:FIELD] (KEY: letters, digits, _ and -)"
            )
        fmt = match.group("format")
        kind: Format = (
            "default" if fmt is None else "meta" if fmt.startswith("meta:") else "full" if fmt == "full" else "summary"
        )
        found.append(Placeholder(match.group("key"), kind, match.group("field"), match.group(0), start, match.end()))
    return found


def placeholder_keys(text: str) -> list[str]:
    """The distinct memory keys ``text`` refers to, in order of first mention."""
    return list(dict.fromkeys(p.key for p in parse_placeholders(text)))


def format_value(slot: SlotValue, placeholder: Placeholder) -> str:
    """What a placeholder stands for: ``full`` the content, ``summary`` and the bare form the summary,
    ``meta:FIELD`` that metadata field (JSON for structured values); neutralised
    (:func:`~agent_memory.text.neutralize`), as every stored text a model may read."""
    return neutralize(_raw_value(slot, placeholder))


def _raw_value(slot: SlotValue, placeholder: Placeholder) -> str:
    if placeholder.format == "full":
        return slot.content
    if placeholder.format == "meta":
        assert placeholder.field is not None
        if placeholder.field not in slot.metadata:
            known = ", ".join(sorted(slot.metadata)) or "none"
            raise PlaceholderError(f"memory {slot.key!r} has no metadata field {placeholder.field!r} (it has: {known})")
        value = slot.metadata[placeholder.field]
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return slot.summary


def substitute(
    text: str, slots: Mapping[str, SlotValue], render: Callable[[SlotValue, Placeholder], str]
) -> Resolution:
    """Replace every placeholder by ``render(slot, placeholder)`` (one pass, linear in the text) and
    report where each replacement landed. A key not in ``slots`` raises, naming it;
    ``render`` may raise for a missing field. Nothing is replaced unless everything can be."""
    placeholders = parse_placeholders(text)
    missing = sorted({p.key for p in placeholders if p.key not in slots})
    if missing:
        raise PlaceholderError(f"no memory for {missing}; available: {sorted(slots) or 'none'}")
    values = [render(slots[p.key], p) for p in placeholders]
    pieces: list[str] = []  # joined once: slicing the whole text per placeholder was quadratic
    position = 0
    for p, value in zip(placeholders, values, strict=True):
        pieces += [text[position : p.start], value]
        position = p.end
    out = "".join([*pieces, text[position:]])
    spans = []
    shift = 0
    for p, value in zip(placeholders, values, strict=True):
        start = p.start + shift
        spans.append((p, start, start + len(value)))
        shift += len(value) - (p.end - p.start)
    return Resolution(out, tuple(spans))


def resolve(text: str, slots: Mapping[str, SlotValue]) -> Resolution:
    """Replace every placeholder by what it stands for (:func:`format_value`)."""
    return substitute(text, slots, format_value)
