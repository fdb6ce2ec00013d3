"""Text normalisation shared by indexing and querying."""

from __future__ import annotations

import unicodedata

_CJK_RANGES = (
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2A6DF),
)


def fold(text: str) -> str:
    """NFKC-fold (full-width letters, digits and punctuation become half-width) and lower-case.

    >>> fold("ＭｙＳＱＬ　配置１２３")
    'mysql 配置123'
    """
    return unicodedata.normalize("NFKC", text).lower()


def is_cjk(char: str) -> bool:
    """True for a CJK unified ideograph (Chinese character)."""
    code = ord(char)
    return any(lo <= code <= hi for lo, hi in _CJK_RANGES)


def has_cjk(text: str) -> bool:
    """True when the text holds at least one Chinese character."""
    return any(is_cjk(c) for c in text)
