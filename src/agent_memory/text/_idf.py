"""jieba's bundled IDF table, read without importing ``jieba.analyse``.

>>> table, median = idf_table()
>>> table["数据库"] > median > char_idf()["的"]
True

Importing ``jieba.analyse`` also loads jieba's part-of-speech dictionary (``jieba.posseg``), which
costs about a second in a fresh process and which nothing here uses. The search tokenizer only needs
the IDF of single characters on its first query, so that part is found by one regular-expression scan
of the file instead of parsing all 270,000 lines: this keeps a restarted process's first search fast.
The file is the one ``jieba.analyse.default_tfidf`` reads, parsed the same way, so the figures are
identical.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import jieba

from ._derived import derived_table

#: The table ``jieba.analyse`` loads by default (it ships with the package; nothing is downloaded).
IDF_PATH = Path(jieba.__file__).parent / "analyse" / "idf.txt"

#: A line holding one character and its IDF.
_CHAR_LINE = re.compile(r"^(\S) (\S+)\s*$", re.MULTILINE)


def _text() -> str:
    # not kept: each table below is built once, and the 6 MB text is not needed after that
    return IDF_PATH.read_bytes().decode("utf-8")


@cache
def idf_table() -> tuple[dict[str, float], float]:
    """Every word's IDF and the median IDF (jieba's default for unknown words)."""
    table: dict[str, float] = {}
    for line in _text().splitlines():
        word, freq = line.strip().split(" ")
        table[word] = float(freq)
    return table, sorted(table.values())[len(table) // 2]


@cache
def char_idf() -> dict[str, float]:
    """The IDF of single characters only (about 11,000 entries, found by one scan of the file, about
    0.04 s, then read back by later processes: :func:`derived_table`)."""
    return derived_table("char-idf", sources=[IDF_PATH], code=Path(__file__), build=_scan_chars, adopt=_float_table)


def _scan_chars() -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for m in _CHAR_LINE.finditer(_text())}


def _float_table(raw: object) -> dict[str, float] | None:
    if isinstance(raw, dict) and raw and all(type(k) is str and type(v) is float for k, v in raw.items()):
        return raw
    return None
