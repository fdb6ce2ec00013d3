"""Text normalisation shared by indexing and querying.

``fold`` is :func:`data_layer.fold_text`, the project's one folding rule (full/half width, traditional
-> simplified Chinese, case, accents): the data layer needs it for keywords matched in SQL, and this
package uses the very same function for search terms and queries, so the two can never disagree.

>>> fold("ＭｙＳＱＬ　配置１２３ 東京 Café")
'mysql 配置123 东京 cafe'
"""

from __future__ import annotations

from data_layer import FOLD_VERSION
from data_layer import fold_text as fold

__all__ = ["FOLD_VERSION", "fold", "has_cjk", "is_cjk"]

_CJK_RANGES = (
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2A6DF),
)


def is_cjk(char: str) -> bool:
    """True for a CJK unified ideograph (Chinese character)."""
    code = ord(char)
    return any(lo <= code <= hi for lo, hi in _CJK_RANGES)


def has_cjk(text: str) -> bool:
    """True when the text holds at least one Chinese character."""
    return any(is_cjk(c) for c in text)
