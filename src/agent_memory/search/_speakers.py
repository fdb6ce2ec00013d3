"""Who a query names among a user's speakers: the one rule for ``metadata["speaker"]`` in search.

A memory may say who said it (``IndexedMemory.speaker``); a query naming exactly one person of the
user's conversations ("what does Joanna do while she writes?") is about that person, and the search
weighs what the others said less (:func:`~._components.weigh_speakers`).

A name is found in the query as written, not through the search terms: stemming would find Mark in
"marked" and stop words would lose Will and May. So:

- a name written with a capital ASCII letter first (``Joanna``, ``Will``) is found where the query
  writes it so, between non-alphanumeric characters: "Will" names Will, "I will" does not;
- any other name (``刘德华``, ``joanna``, ``Ｊｏａｎｎａ``) is found in the folded query (width,
  traditional/simplified, case, accents), between non-alphanumeric ASCII characters;
- spellings that fold alike are one person ("Joanna", "joanna", "Ｊｏａｎｎａ"; 劉德華 and 刘德华);
- of two names found where one holds the other ("Anna" in "Anna Lee"), the longer is meant.

>>> table = SpeakerNames.of(["Joanna", "Nate", "joanna", "Anna", "Anna Lee"])
>>> [table.names[i] for i in table.named("What did Joanna tell Nate?")]
['joanna', 'nate']
>>> [table.names[i] for i in table.named("Does Anna Lee like turtles?")]
['anna lee']
>>> table.named("it will rain")
[]
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..text import fold

#: With more distinct speakers than this, no query is taken to name one (a bound on the per-search cost).
MAX_SPEAKERS = 1000
_WORD_START = r"(?<![A-Za-z0-9])"
_WORD_END = r"(?![A-Za-z0-9])"


def _identity(name: str) -> str:
    return " ".join(fold(name).split())


@dataclass(frozen=True, slots=True)
class SpeakerNames:
    """The speakers of one index as people: ``names[person]`` (folded), ``person_of[code]`` for each
    speaker code of ``UserIndex.speaker_code`` (-1: a name with nothing to find), and the patterns."""

    names: tuple[str, ...]
    person_of: npt.NDArray[np.int64]
    _as_written: tuple[tuple[re.Pattern[str], int], ...]
    _folded: tuple[tuple[re.Pattern[str], int], ...]

    @classmethod
    def of(cls, speakers: Sequence[str]) -> SpeakerNames:
        """The table of ``speakers``, listed by code (a name's position)."""
        people: dict[str, int] = {}
        person_of = np.full(len(speakers), -1, dtype=np.int64)
        as_written: dict[str, int] = {}
        folded: dict[str, int] = {}
        for code, name in enumerate(speakers):
            identity = _identity(name)
            if not any(ch.isalnum() for ch in identity):
                continue  # punctuation or blanks: nothing a query could name
            person = people.setdefault(identity, len(people))
            person_of[code] = person
            written = " ".join(name.split())
            if written.isascii() and written[:1].isupper():
                as_written.setdefault(written, person)
            else:
                folded.setdefault(identity, person)
        return cls(
            names=tuple(people),
            person_of=person_of,
            _as_written=tuple((re.compile(_WORD_START + re.escape(w) + _WORD_END), p) for w, p in as_written.items()),
            _folded=tuple((re.compile(_WORD_START + re.escape(f) + _WORD_END), p) for f, p in folded.items()),
        )

    def named(self, query: str) -> list[int]:
        """The people ``query`` names (indexes into ``names``), a name held in a longer one left out."""
        written = " ".join(unicodedata.normalize("NFKC", query).split())
        folded = _identity(query)
        found = {p for pattern, p in self._as_written if pattern.search(written)}
        found |= {p for pattern, p in self._folded if pattern.search(folded)}
        return sorted(
            p
            for p in found
            if not any(
                q != p and re.search(_WORD_START + re.escape(self.names[p]) + _WORD_END, self.names[q]) for q in found
            )
        )
