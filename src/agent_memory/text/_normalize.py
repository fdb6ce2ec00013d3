"""Text normalisation shared by indexing and querying.

``fold`` is :func:`data_layer.fold_text`, the project's one folding rule (full/half width, traditional
-> simplified Chinese, case, accents): the data layer needs it for keywords matched in SQL, and this
package uses the very same function for search terms and queries, so the two can never disagree.

>>> fold("ＭｙＳＱＬ　配置１２３ 東京 Café")
'mysql 配置123 东京 cafe'
"""

from __future__ import annotations

import re

from data_layer import FOLD_VERSION
from data_layer import fold_text as fold

__all__ = ["FOLD_VERSION", "fold", "has_cjk", "is_cjk"]

_CJK_RANGES = (
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2A6DF),
)


#: One character class for the ranges: the regex engine scans in C, where a loop over the characters
#: in Python cost a process's first search about 0.1 s (the 100,000 words of the word vectors, sorted
#: into those with and without a Chinese character).
_CJK = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES) + "]")


def is_cjk(char: str) -> bool:
    """True for a CJK unified ideograph (Chinese character); ``char`` is one character.

    >>> is_cjk("東"), is_cjk("a"), is_cjk("。")
    (True, False, False)
    """
    if len(char) != 1:
        raise TypeError(f"is_cjk() takes one character, got a str of length {len(char)}")
    return _CJK.match(char) is not None


def has_cjk(text: str) -> bool:
    """True when the text holds at least one Chinese character.

    >>> has_cjk("mysql 配置"), has_cjk("café")
    (True, False)
    """
    return _CJK.search(text) is not None
