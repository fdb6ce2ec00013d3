"""What every backend can store: text without NUL or lone surrogates, JSON of bounded depth and size.

SQLite stores any Python string; PostgreSQL refuses NUL (``\\x00``) in text and JSON, and psycopg
cannot encode a lone surrogate (``\\ud800``) at all. Refusing both everywhere, before anything is
written, keeps the two backends equivalent: what one accepts the other accepts, and data can move
between them. Metadata is walked without recursion, so a 5,000-level structure is refused with a
message instead of a ``RecursionError``, and the walk stops as soon as the size limit is passed, so
10 MB of metadata costs no more than 64 KB of it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ._errors import InvalidInputError

#: Nesting depth of metadata (and archived tool input) objects and arrays.
MAX_METADATA_DEPTH = 32
#: Size of metadata as JSON (UTF-8 bytes); larger data belongs in the content or the tool-result archive.
MAX_METADATA_BYTES = 64 * 1024

_SCALARS = (str, int, float, bool, type(None))
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str, *, name: str) -> str:
    """``text`` unchanged, or :class:`InvalidInputError` if it holds a NUL character or a lone surrogate.

    Linear in the length (two C-level scans); ``name`` says which argument in the message.
    """
    nul = text.find("\x00")
    if nul >= 0:
        raise InvalidInputError(
            f"{name} contains a NUL character (\\x00) at position {nul}; PostgreSQL cannot store it. "
            "Remove it, or encode binary data (base64) before storing"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{name} contains a lone surrogate ({text[exc.start]!r}) at position {exc.start}, which is not valid "
            "Unicode; decode the source with errors='replace' or remove the character"
        ) from None
    return text


def storable_copy(text: str) -> str:
    """``text`` with the characters no backend stores (NUL, lone surrogates) replaced by U+FFFD.

    For text the library records on its own rather than refuses: a tool's output (binary data, a badly
    decoded file), a chat message already sent to the model (its reply must not be stored without it),
    a code run's result. The rest of the text is kept.

    >>> storable_copy("caf\\x00e")
    'caf\\ufffde'
    """
    if "\x00" not in text:
        try:
            text.encode("utf-8")
            return text
        except UnicodeEncodeError:
            pass
    return _SURROGATE.sub("\ufffd", text.replace("\x00", "\ufffd"))


def storable_json(value: object, *, name: str) -> dict[str, Any]:
    """A JSON-serialisable mapping (``None`` becomes ``{}``) within the depth and size limits.

    Keys must be strings (JSON would turn ``1`` into ``"1"`` silently, and ``{1: .., "1": ..}`` into one
    key); every string must be :func:`storable_text`.
    Returns the JSON round trip of the value, so what is returned is what is stored.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{name} must be a mapping (dict), got {type(value).__name__}")
    _walk(value, name=name)
    try:
        encoded = json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be JSON-serialisable: {exc}") from None
    if len(encoded.encode("utf-8")) > MAX_METADATA_BYTES:
        raise InvalidInputError(_too_big(name))
    decoded: dict[str, Any] = json.loads(encoded)
    return decoded


def _walk(root: Mapping[Any, Any], *, name: str) -> None:
    """Check depth, size and strings of a structure iteratively; stop at the first problem.

    The size counted is a lower bound of the JSON text (strings, plus a few bytes per item), so the
    walk ends long before a huge structure has been visited. A circular structure ends at the depth
    limit; one that repeats a shared list ends at the size limit.
    """
    size = 0
    stack: list[tuple[object, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            size += len(node) + 2
            storable_text(node, name=f"a string in {name}")
        elif isinstance(node, _SCALARS):
            size += 4
        elif isinstance(node, Mapping | list | tuple):
            if depth > MAX_METADATA_DEPTH:
                raise InvalidInputError(
                    f"{name} is nested more than {MAX_METADATA_DEPTH} levels deep; flatten it (for example "
                    "'a.b.c' keys) or store the structure as content"
                )
            size += 2
            if isinstance(node, Mapping):
                for key, item in node.items():
                    if isinstance(key, str):
                        size += len(key) + 3
                        storable_text(key, name=f"a key in {name}")
                    else:
                        raise InvalidInputError(
                            f"{name} keys must be strings, got {type(key).__name__} {key!r:.40}: write it as "
                            f"{json.dumps(str(key), ensure_ascii=False)[:42]} (JSON keys are strings)"
                        )
                    stack.append((item, depth + 1))
            else:
                stack.extend((item, depth + 1) for item in node)
        else:
            raise InvalidInputError(f"{name} must be JSON-serialisable: {type(node).__name__} is not a JSON value")
        if size > MAX_METADATA_BYTES:
            raise InvalidInputError(_too_big(name))


def _too_big(name: str) -> str:
    return (
        f"{name} is larger than {MAX_METADATA_BYTES // 1024} KB as JSON; keep metadata small and put large data "
        "in the content (or the tool-result archive)"
    )
