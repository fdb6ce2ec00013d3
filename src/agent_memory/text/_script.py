"""Which script a text is written in: Chinese characters, Latin letters, both or neither.

Words cannot relate a message and a memory written in different scripts ("What kind of movies do I
dislike?" and "喜欢科幻电影，不喜欢恐怖片" share none), so there the search lets a multilingual embedder's
likeness count whole (``Pipeline.semantic``).

>>> script_of("What kind of movies do I dislike?"), script_of("喜欢科幻电影"), script_of("我喜欢 Python")
('latin', 'cjk', None)
"""

from __future__ import annotations

import re
from typing import Literal

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")

Script = Literal["cjk", "latin"]


def script_of(text: str) -> Script | None:
    """``"cjk"`` for a text of Chinese characters and no Latin letters, ``"latin"`` for the other way
    round, ``None`` for a text of both or of neither (digits, emoji). The first 2,000 characters are read."""
    head = str(text)[:2000]
    cjk, latin = bool(_CJK.search(head)), bool(_LATIN.search(head))
    if cjk == latin:
        return None
    return "cjk" if cjk else "latin"
