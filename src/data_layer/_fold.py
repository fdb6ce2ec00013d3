"""Text folding: the one rule that decides when two spellings are the same word for search.

>>> fold_text("東京 ＣＡＦÉ ＡＢＣ１２３ Straße")
'东京 cafe abc123 strasse'

Every search term, every stored keyword (memory keywords, user tags, synonyms) and every query goes
through :func:`fold_text`, on both backends, so whatever is compared in Python or in SQL compares
folded values. It lives in the data layer because keywords are matched in SQL there; ``agent_memory.text``
re-exports it as ``fold``. Only terms and keywords are folded: stored content stays as written.

The steps, in order (each one is needed by a later one):

1. NFKC: full-width letters, digits and punctuation become half-width (``ＡＢＣ１２３`` -> ``ABC123``),
   compatibility ideographs and ligatures become the ordinary characters (``ﬁ`` -> ``fi``);
2. traditional -> simplified Chinese with OpenCC's ``t2s`` dictionaries (``東京`` -> ``东京``), which
   convert by phrase, not only by character; skipped for text without a Chinese character;
3. ``casefold`` (``Straße`` -> ``strasse``, ``ΣΑΣ`` -> ``σασ``), stronger than ``lower``;
4. NFKD, then the combining accents of Latin, Greek and Cyrillic letters are dropped (``café`` ->
   ``cafe``), then NFC. Only the combining diacritical mark blocks are dropped: the kana voicing marks
   (``が`` stays ``が``), Hangul jamo and the vowel signs of Indic scripts are letters, not accents.

OpenCC is the C++ ``opencc`` wheel (Apache-2.0), which ships its dictionaries: nothing is downloaded.
Its converter is loaded on the first Chinese text (about 40 ms), once per thread.

Speed: pure ASCII text takes a fast path (``lower``); 1,000 short mixed memories fold in about 2 ms.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from typing import Any

from ._storable import storable_copy

#: Identifies the folding rule; part of the search tokenizer's name, so a change re-analyses memories.
FOLD_VERSION = "fold2"

#: Chinese characters (CJK unified ideographs and their extensions) that OpenCC may convert.
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\U00020000-\U0002ebef]")
#: Combining accents (Combining Diacritical Marks and their Extended and Supplement blocks, the
#: marks for symbols and the half marks).
_ACCENTS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")

_local = threading.local()


def _t2s() -> Any:
    converter = getattr(_local, "t2s", None)
    if converter is None:
        import opencc

        converter = _local.t2s = opencc.OpenCC("t2s.json")
    return converter


def fold_text(text: str) -> str:
    """``text`` folded for matching: full/half width, traditional/simplified Chinese, case and accents.

    >>> fold_text("ＭｙＳＱＬ　配置１２３")
    'mysql 配置123'
    >>> fold_text("臺灣的咖啡館") == fold_text("台湾的咖啡馆")
    True

    Folding twice gives the same text as folding once.
    """
    if text.isascii():
        return text.lower()
    text = unicodedata.normalize("NFKC", text)
    if _HAN.search(text):
        try:
            text = _t2s().convert(text)
        except UnicodeEncodeError:  # a lone surrogate (text decoded badly) matches nothing stored: U+FFFD
            text = _t2s().convert(storable_copy(text))
    text = text.casefold()
    decomposed = unicodedata.normalize("NFKD", text)
    if _ACCENTS.search(decomposed):
        text = _ACCENTS.sub("", decomposed)
    return unicodedata.normalize("NFC", text)
