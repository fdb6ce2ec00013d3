"""Validation and normalisation of everything that reaches the data layer from outside.

Each function raises :class:`InvalidInputError` with a message that names the argument and says
what is allowed. Every text that is stored passes :func:`~data_layer.storable_text` (no NUL, no
lone surrogate), so SQLite and PostgreSQL accept and refuse the same input.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import math
import re
import unicodedata
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from ._errors import InvalidInputError
from ._fold import fold_text
from ._memory_types import MEMORY_TYPE_NAMES, MemoryType
from ._records import KEYWORD_SOURCES, MESSAGE_ROLES, SESSION_FIELD, SPEAKER_FIELD, KeywordInput
from ._storable import storable_json as json_object
from ._storable import storable_text as storable
from ._tables import MEMORY_KEY_LENGTH, SCOPE_ID_LENGTH

#: Each memory's content holds at most 100 KB (UTF-8 bytes); the rest is cut.
MAX_CONTENT_BYTES = 100 * 1024
MAX_SUMMARY_CHARS = 2000
MAX_MESSAGE_BYTES = 1024 * 1024
MAX_KEYWORD_CHARS = 100
SUMMARY_DEFAULT_CHARS = 120

#: Keys are placeholder-safe: letters (any script), digits, ``_`` and ``-`` (``[memory:KEY]``).
MEMORY_KEY_PATTERN = re.compile(r"[\w-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


#: Unicode categories that show nothing: format characters (zero-width space and joiners, BOM, bidi
#: marks), controls and separators.
_INVISIBLE = frozenset({"Cf", "Cc", "Zs", "Zl", "Zp"})


def has_visible_text(text: str) -> bool:
    """Whether ``text`` shows anything: ``str.strip()`` keeps a zero-width space (U+200B) or a BOM
    (U+FEFF), so a name or message of only those looked non-empty and was stored as a blank line.
    Stops at the first visible character (cheap on long text)."""
    if not isinstance(text, str):
        raise InvalidInputError(f"text must be a str, got {type(text).__name__}")
    return any(not ch.isspace() and unicodedata.category(ch) not in _INVISIBLE for ch in text)


def scope_id(value: object, *, name: str, optional: bool = False) -> str | None:
    """Normalise a user, friend, thread or conversation id to ``str``.

    Accepts ``str`` and ``int`` (``7`` and ``"7"`` are the same id); rejects ``bool``, floats,
    empty strings, control characters and ids longer than 128 characters.
    """
    if value is None:
        if optional:
            return None
        raise InvalidInputError(f"{name} is required (a str or int id)")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidInputError(f"{name} must be a str or int id, got {type(value).__name__}")
    text = str(value)
    if not text or text.strip() != text or not has_visible_text(text):
        raise InvalidInputError(f"{name} must be a non-empty id without surrounding spaces, got {text!r}")
    if len(text) > SCOPE_ID_LENGTH:
        raise InvalidInputError(f"{name} is {len(text)} characters long; at most {SCOPE_ID_LENGTH} allowed")
    if _CONTROL.search(text):
        raise InvalidInputError(f"{name} must not contain control characters")
    return storable(text, name=name)


def user_id(value: object) -> str:
    """A required user id (see :func:`scope_id`)."""
    result = scope_id(value, name="user_id")
    assert result is not None
    return result


def memory_key(value: object) -> str:
    """A memory key: 1-255 characters of letters (any script), digits, ``_`` or ``-``."""
    if not isinstance(value, str):
        raise InvalidInputError(f"memory_key must be a str, got {type(value).__name__}")
    if not value:
        raise InvalidInputError("memory_key must not be empty")
    if len(value) > MEMORY_KEY_LENGTH:
        raise InvalidInputError(f"memory_key is {len(value)} characters long; at most {MEMORY_KEY_LENGTH}")
    if not MEMORY_KEY_PATTERN.fullmatch(value):
        raise InvalidInputError(
            f"memory_key {value!r} may only hold letters, digits, '_' and '-' "
            "(so that [memory:KEY] placeholders can name it)"
        )
    return value


def memory_type(value: object) -> str:
    """One of :class:`MemoryType`'s values."""
    allowed = MEMORY_TYPE_NAMES
    if isinstance(value, MemoryType):
        return value.value
    if not isinstance(value, str) or value not in allowed:
        raise InvalidInputError(f"unknown memory_type {value!r}; use one of: {', '.join(allowed)}")
    return value


def memory_types(values: object) -> list[str] | None:
    """An optional, non-empty list of memory types."""
    if values is None:
        return None
    if isinstance(values, str) or not isinstance(values, list | tuple | set | frozenset):
        raise InvalidInputError("memory_types must be a list of memory type names")
    if not values:
        raise InvalidInputError("memory_types must not be empty; pass None for all types")
    return [memory_type(v) for v in values]


def text_field(value: object, *, name: str) -> str:
    """A required ``str`` (may be empty only where the caller allows it)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str, got {type(value).__name__}")
    return value


def stored_text(value: object, *, name: str) -> str:
    """A ``str`` that every backend can store (see :func:`~data_layer.storable_text`)."""
    return storable(text_field(value, name=name), name=name)


def truncate_utf8(text: str, max_bytes: int) -> tuple[str, int]:
    """Cut ``text`` to at most ``max_bytes`` UTF-8 bytes without splitting a character.

    Returns the cut text and the original size in bytes.
    """
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= max_bytes:
        return text, len(raw)
    return raw[:max_bytes].decode("utf-8", errors="ignore"), len(raw)


def reserved_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` unchanged, or :class:`InvalidInputError` when a field the library itself reads has the
    wrong shape: ``source_message_ids`` (the chat messages a memory came from: cited as evidence, listed
    as its sources), ``session_id`` (which conversation: neighbours are lifted only within one),
    ``speaker`` (who said it: a question naming a speaker is about what that speaker said) and ``date``
    (shown with an event). Any other field is the application's own."""
    ids = meta.get("source_message_ids")
    if ids is not None and (
        not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) and i > 0 for i in ids)
    ):
        raise InvalidInputError("metadata.source_message_ids must be a list of chat message ids (positive integers)")
    session = meta.get(SESSION_FIELD)
    if session is not None and (
        isinstance(session, bool) or not isinstance(session, str | int) or len(str(session)) > 128
    ):
        raise InvalidInputError(
            f"metadata.{SESSION_FIELD} must be a conversation id (text or an integer, at most 128 characters)"
        )
    speaker = meta.get(SPEAKER_FIELD)
    if speaker is not None and (not isinstance(speaker, str) or not speaker.strip() or len(speaker) > 128):
        raise InvalidInputError(
            f"metadata.{SPEAKER_FIELD} must be the name of who said it (text of 1-128 characters, not blank)"
        )
    date = meta.get("date")
    if date is not None and not isinstance(date, str):
        raise InvalidInputError("metadata.date must be text, such as 2026-01-02")
    return meta


def content_and_metadata(content: object, metadata: object, *, on_oversize: str) -> tuple[str, dict[str, Any]]:
    """Validate content and metadata; cut content over 100 KB and record that in the metadata.

    With ``on_oversize="error"`` oversized content is refused instead. Only the part that is kept
    must be storable (a NUL in the cut-off tail does not matter).
    """
    text = text_field(content, name="content")
    storable(text[:MAX_CONTENT_BYTES], name="content")  # the kept part lies within these characters
    if not has_visible_text(text):
        raise InvalidInputError("content is empty: a memory needs some text")
    meta = reserved_metadata(json_object(metadata, name="metadata"))
    cut, size = truncate_utf8(text, MAX_CONTENT_BYTES)
    if size > MAX_CONTENT_BYTES:
        if on_oversize == "error":
            raise InvalidInputError(
                f"content is {size} bytes; at most {MAX_CONTENT_BYTES} allowed. Store the full text "
                "elsewhere (for tool output: the tool-result archive) or pass on_oversize='truncate'"
            )
        if on_oversize != "truncate":
            raise InvalidInputError("on_oversize must be 'truncate' or 'error'")
        meta = {
            **meta,
            "truncation": {
                "original_bytes": size,
                "kept_bytes": len(cut.encode("utf-8")),
                "limit_bytes": MAX_CONTENT_BYTES,
            },
        }
        return cut, meta
    if on_oversize not in ("truncate", "error"):
        raise InvalidInputError("on_oversize must be 'truncate' or 'error'")
    return text, meta


def summary(value: object, content: str) -> str:
    """The given summary, or the first sentence of the content (at most 120 characters)."""
    if value is None:
        return default_summary(content)
    text = stored_text(value, name="summary").strip()
    if len(text) > MAX_SUMMARY_CHARS:
        raise InvalidInputError(
            f"summary is {len(text)} characters; at most {MAX_SUMMARY_CHARS}. Put details in content"
        )
    return text or default_summary(content)


_SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=\.)\s|\n")


def default_summary(content: str) -> str:
    """An extractive summary: the first sentence or line of ``content``, at most 120 characters."""
    stripped = " ".join(content.split())
    if not stripped:
        return ""
    first = _SENTENCE_END.split(stripped, maxsplit=1)[0].strip() or stripped
    if len(first) > SUMMARY_DEFAULT_CHARS:
        return first[: SUMMARY_DEFAULT_CHARS - 1] + "…"
    return first


def aware_datetime(value: object, *, name: str, optional: bool = True) -> datetime | None:
    """A timezone-aware datetime, converted to UTC."""
    if value is None:
        if optional:
            return None
        raise InvalidInputError(f"{name} is required")
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{name} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(
            f"{name} must be timezone-aware (for example datetime.now(timezone.utc)); got a naive datetime"
        )
    return value.astimezone(UTC)


def time_range(since: object, until: object) -> tuple[datetime | None, datetime | None]:
    """An optional ``[since, until)`` range with ``since <= until``."""
    lo = aware_datetime(since, name="since")
    hi = aware_datetime(until, name="until")
    if lo is not None and hi is not None and lo > hi:
        raise InvalidInputError(f"since ({lo.isoformat()}) is after until ({hi.isoformat()})")
    return lo, hi


def bounded_int(value: object, *, name: str, low: int, high: int) -> int:
    """An ``int`` in ``[low, high]`` (``bool`` is refused)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{name} must be an int, got {type(value).__name__}")
    if not low <= value <= high:
        raise InvalidInputError(f"{name}={value} is out of range; use {low} to {high}")
    return value


def unit_float(value: object, *, name: str) -> float:
    """A finite number in ``[0, 1]``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{name} must be a number in 0-1, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise InvalidInputError(f"{name}={value} is out of range; use a number from 0 to 1")
    return number


def keyword_text(value: object) -> str:
    """A keyword: folded (:func:`fold_text`: width, traditional Chinese, case, accents) and stripped,
    non-empty, at most 100 characters. Every keyword stored or looked up in SQL passes here."""
    return _keyword_text(text_field(value, name="keyword"))


@functools.lru_cache(maxsize=32_768)
def _keyword_text(value: str) -> str:
    """:func:`keyword_text` of a ``str``, kept for the words seen most recently: a bulk write's memories
    share most of their keywords, and folding one costs more than the rest of its checks."""
    text = fold_text(value).strip()
    if not text:
        raise InvalidInputError("keyword must not be empty")
    if len(text) > MAX_KEYWORD_CHARS:
        raise InvalidInputError(f"keyword is {len(text)} characters; at most {MAX_KEYWORD_CHARS}")
    if _CONTROL.search(text):
        raise InvalidInputError("keyword must not contain control characters")
    return storable(text, name="keyword")


def keyword_list(values: object) -> list[object]:
    """Keywords as a list: a list, tuple or other iterable of keywords, never one ``str`` (which would
    otherwise be read as its letters)."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise InvalidInputError(
            f'keywords must be a list of keywords, e.g. ["数据库", "config"], not a {type(values).__name__}'
        )
    return list(values)


def _keyword_input(item: object) -> KeywordInput:
    if isinstance(item, KeywordInput):
        kw, weight, source = item.keyword, item.weight, item.source
    elif isinstance(item, str):
        kw, weight, source = item, 1.0, "user_tag"
    elif isinstance(item, tuple) and len(item) == 2:
        kw, weight, source = item[0], item[1], "user_tag"
    else:
        raise InvalidInputError(f"cannot read keyword {repr(item)[:80]}; use str, (keyword, weight) or KeywordInput")
    if source not in KEYWORD_SOURCES:
        raise InvalidInputError(f"keyword source {source!r} unknown; use one of {KEYWORD_SOURCES}")
    norm = keyword_text(kw)
    return KeywordInput(norm, unit_float(weight, name=f"weight of keyword {norm!r}"), source)


def _heaviest(items: Iterable[KeywordInput]) -> tuple[KeywordInput, ...]:
    seen: dict[str, KeywordInput] = {}
    for item in items:
        previous = seen.get(item.keyword)
        if previous is None or previous.weight < item.weight:
            seen[item.keyword] = item
    return tuple(seen.values())


def keyword_inputs(values: object) -> tuple[KeywordInput, ...]:
    """Keywords given as ``KeywordInput``, ``(keyword, weight)`` pairs or plain strings; deduplicated.

    Given by a caller: any bad keyword refuses the call with :class:`InvalidInputError`.
    """
    if values is None:
        return ()
    if isinstance(values, str) or not isinstance(values, list | tuple):
        raise InvalidInputError("keywords must be a list of str, (keyword, weight) or KeywordInput")
    return _heaviest(_keyword_input(item) for item in values)


def analysis_keywords(values: Iterable[object]) -> tuple[KeywordInput, ...]:
    """Keywords computed by an analyzer, with the ones that cannot be stored left out.

    A computed keyword is a by-product of content the caller was allowed to store (a 300-character
    URL, a hash): it must never fail the write, so one that is too long, empty or malformed is
    dropped instead of raising.
    """
    kept: list[KeywordInput] = []
    for item in values:
        try:
            kept.append(_keyword_input(item))
        except InvalidInputError:
            continue
    return _heaviest(kept)


def uuid_list(values: object, *, name: str) -> list[uuid.UUID]:
    """A list of memory ids (``uuid.UUID``), as returned in records."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise InvalidInputError(f"{name} must be a list of uuid.UUID memory ids, not a {type(values).__name__}")
    ids = list(values)
    for item in ids:
        if not isinstance(item, uuid.UUID):
            raise InvalidInputError(f"{name} must hold uuid.UUID memory ids (record.id), got {type(item).__name__}")
    return ids


def id_pairs(values: object, *, name: str) -> list[tuple[uuid.UUID, Any]]:
    """A list of ``(memory id, value)`` pairs."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise InvalidInputError(f"{name} must be a list of (memory id, value) pairs")
    pairs = list(values)
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], uuid.UUID)):
            raise InvalidInputError(f"{name} must hold (uuid.UUID memory id, value) pairs, got {repr(pair)[:60]}")
    return pairs


def message_role(value: object) -> str:
    """One of ``user``, ``assistant``, ``system``, ``tool``."""
    if value not in MESSAGE_ROLES:
        raise InvalidInputError(f"role {value!r} unknown; use one of: {', '.join(MESSAGE_ROLES)}")
    return str(value)


def message_content(value: object) -> str:
    """Message text, at most 1 MiB (UTF-8). Larger text belongs in the tool-result archive."""
    text = stored_text(value, name="content")
    size = len(text.encode("utf-8"))
    if size > MAX_MESSAGE_BYTES:
        raise InvalidInputError(
            f"message content is {size} bytes; at most {MAX_MESSAGE_BYTES}. Archive large tool output instead"
        )
    return text


def encode_cursor(parts: list[Any]) -> str:
    """An opaque cursor for keyset pagination."""
    return base64.urlsafe_b64encode(json.dumps(parts, separators=(",", ":")).encode()).decode()


def decode_cursor(cursor: object, *, kinds: tuple[type, ...]) -> list[Any]:
    """Read a cursor produced by :func:`encode_cursor`; the parts must have the given types."""
    if not isinstance(cursor, str):
        raise InvalidInputError("cursor must be the str returned as next_cursor by a previous page")
    try:
        parts = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidInputError("cursor is not one this library produced; pass next_cursor unchanged") from None
    if (
        not isinstance(parts, list)
        or len(parts) != len(kinds)
        or not all(isinstance(p, k) for p, k in zip(parts, kinds, strict=True))
    ):
        raise InvalidInputError("cursor is not one this library produced; pass next_cursor unchanged")
    return parts


def cursor_position(cursor: object, *, id_kind: type[int] | type[uuid.UUID]) -> tuple[datetime, Any]:
    """The ``(created_at, id)`` a keyset listing's cursor points at: an aware time and an id (a whole
    number in range, or a UUID), as the listing wrote them. Anything else was not written by it.

    >>> at, mid = cursor_position(encode_cursor(["2026-03-01T12:00:00+00:00", 7]), id_kind=int)
    >>> at.tzinfo is not None, mid
    (True, 7)
    """
    at_iso, raw_id = decode_cursor(cursor, kinds=(str, int if id_kind is int else str))
    refused = InvalidInputError("cursor is not one this library produced; pass next_cursor unchanged")
    try:
        at = datetime.fromisoformat(at_iso)
        found: Any = uuid.UUID(raw_id) if id_kind is uuid.UUID else raw_id
    except ValueError:
        raise refused from None
    if at.tzinfo is None or (id_kind is int and (isinstance(found, bool) or not 0 <= found < 2**63)):
        raise refused
    return at, found
