"""Lexical query parsing for :class:`~._index.MessageIndex`: quoted phrases and BM25 terms.

A query such as ``'"不吃辣" 火锅'`` becomes a :class:`ParsedQuery`: the quoted phrases (folded; every one
must occur in a hit) and the tokenizer's terms of the whole text (ranked by BM25). Kept apart from the
index, which holds and refreshes the messages; this is pure text handling with no storage. Both names
are re-exported by :mod:`._index`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text import Tokenizer, fold

_QUOTED = re.compile(r'"([^"]*)"|“([^”]*)”|「([^」]*)」|『([^』]*)』')
_LATIN = "0-9a-z\u00c0-\u024f"


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A lexical query: quoted ``phrases`` (folded, must occur) and ``terms`` (BM25, phrase words too)."""

    phrases: tuple[str, ...]
    terms: tuple[str, ...]

    def patterns(self) -> list[re.Pattern[str]]:
        """One regex per phrase over folded text: words separated by any whitespace, and a Latin word
        at either end must not continue (``"last week"`` does not match ``"last weekend"``)."""
        out = []
        for phrase in self.phrases:
            body = r"\s+".join(re.escape(w) for w in phrase.split())
            lead = f"(?<![{_LATIN}])" if re.match(f"[{_LATIN}]", phrase[0]) else ""
            tail = f"(?![{_LATIN}])" if re.match(f"[{_LATIN}]", phrase[-1]) else ""
            out.append(re.compile(lead + body + tail))
        return out


def parse_query(text: str, tokenizer: Tokenizer) -> ParsedQuery:
    """Split ``text`` into quoted phrases (``"..."``, ``“...”``, ``「...」``, ``『...』``; full-width
    quotes fold to ASCII) and BM25 terms (the tokenizer's terms of the whole text)."""
    folded = fold(text)
    phrases: list[str] = []

    def take(match: re.Match[str]) -> str:
        phrase = " ".join(next(g for g in match.groups() if g is not None).split())
        if phrase:
            phrases.append(phrase)
        return f" {phrase} "

    rest = _QUOTED.sub(take, folded).replace('"', " ")
    return ParsedQuery(tuple(dict.fromkeys(phrases)), tuple(dict.fromkeys(tokenizer.tokens(rest))))
