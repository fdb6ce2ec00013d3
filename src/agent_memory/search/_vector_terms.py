"""Vectors as words: random-hyperplane (sign) LSH bucket terms a full-text engine can index.

A memory's embedding becomes a few dozen short terms (``~3h1a7``) stored beside its words, so the
store's own engine (SQLite FTS5, a PostgreSQL ``tsvector``) can return the memories nearest a query's
vector: those holding the most of the query's terms. The search then re-scores those candidates by
exact cosine of the stored vectors.

Each of ``tables`` tables has its own hyperplanes; the signs of a vector's projections on them are a
bit string. A memory stores, per table, the bucket of one or more prefixes of that string (``levels``,
in bits): a short prefix is a coarse bucket, a long one a fine bucket. A query asks, per table, for its
own bucket at the levels whose buckets are not too big for the user's collection, plus the buckets of
the most likely near misses (multi-probe: the bits whose projections were closest to zero, flipped). A
memory's count of matched terms grows with how many tables (and how deep a prefix) it shares with the
query, a proxy of its angle to the query. The default (many tables of few bits, one level) is what
ranked the exact nearest memories best for a budget of 64 terms per memory in the measurement of
``benchmarks/store_engine/vectors.py``; prefixes at several levels are there to compare.

The hyperplanes come from a fixed seed and the embedder's name and dimension (numpy's PCG64), so every
process on every machine computes the same terms; :attr:`VectorTermScheme.name` also holds a digest of
the hyperplanes, so stored terms made by another scheme (or a numpy that draws other numbers) are seen
as stale.

>>> import numpy as np
>>> scheme = VectorTermScheme(embedder="demo", dim=8)
>>> v = np.arange(1, 9, dtype=np.float32)
>>> terms = scheme.memory_terms(v)
>>> len(terms), terms[0][0], len(scheme.query_terms(v, collection_size=10))
(64, '~', 320)
>>> set(terms) <= set(scheme.query_terms(v, collection_size=10))
True
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import numpy.typing as npt

#: The first character of every bucket term; the tokenizer emits letters, digits and Chinese only.
TERM_PREFIX = "~"
#: A fixed seed, mixed with the embedder's name and dimension: the same hyperplanes everywhere.
SEED = 0x5EC7_0B0C
#: The letter after the table number names the level (the prefix length); hex digits never collide.
_LEVEL_LETTERS = "ghijklmnopqrstuvwxyz"
#: Bits considered for flipping when probing (the least certain of a level's prefix).
_PROBE_BITS = 8
#: Most bits flipped together in one probe.
_PROBE_DEPTH = 3
_HEX = frozenset("0123456789abcdef")


@lru_cache(maxsize=16)
def hyperplanes(embedder: str, dim: int, rows: int) -> npt.NDArray[np.float32]:
    """``rows`` random hyperplanes (normals, one per row) for vectors of ``dim`` dimensions of ``embedder``,
    the same in every process: numpy's PCG64 seeded from :data:`SEED` and a digest of the two."""
    digest = hashlib.blake2b(f"{embedder}\x00{dim}".encode(), digest_size=8).digest()
    rng = np.random.Generator(np.random.PCG64([SEED, int.from_bytes(digest, "big")]))
    planes = rng.standard_normal((rows, dim), dtype=np.float64).astype(np.float32)
    planes.setflags(write=False)
    return planes


@dataclass(frozen=True, slots=True)
class VectorTermScheme:
    """Bucket terms of one embedder's vectors (see the module).

    ``tables`` x ``len(levels)`` terms per memory; ``levels`` are prefix lengths in bits, increasing.
    A query uses the levels whose buckets hold at most ``max_bucket`` of the user's memories on average
    (the finest level when even that holds more), with its own bucket and ``probes`` near buckets of
    each table at each of them.
    """

    embedder: str
    dim: int
    tables: int = 64
    levels: tuple[int, ...] = (5,)
    probes: int = 4
    max_bucket: int = 512
    _planes: npt.NDArray[np.float32] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 1 <= self.tables <= 256:
            raise ValueError("tables must be between 1 and 256")
        if not self.levels or list(self.levels) != sorted(set(self.levels)) or self.levels[0] < 1:
            raise ValueError("levels must be increasing prefix lengths of at least one bit")
        if self.levels[-1] > 48 or len(self.levels) > len(_LEVEL_LETTERS):
            raise ValueError(f"at most {len(_LEVEL_LETTERS)} levels of at most 48 bits")
        if self.dim < 1 or self.probes < 0 or self.max_bucket < 1:
            raise ValueError("dim >= 1, probes >= 0 and max_bucket >= 1")
        object.__setattr__(self, "_planes", hyperplanes(self.embedder, self.dim, self.tables * self.levels[-1]))

    @property
    def name(self) -> str:
        """Identifies the stored terms: changes with any parameter and with the hyperplanes drawn."""
        digest = hashlib.blake2b(self._planes.tobytes(), digest_size=4).hexdigest()
        levels = "-".join(map(str, self.levels))
        return f"lsh-t{self.tables}-l{levels}-{digest}-v1"

    @property
    def terms_per_memory(self) -> int:
        return self.tables * len(self.levels)

    def _bits(self, vector: npt.ArrayLike) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]] | None:
        """Sign bits and projections, ``(tables, max bits)`` each; ``None`` for a vector with no direction."""
        v = np.asarray(vector, dtype=np.float32).reshape(-1)
        if v.shape[0] != self.dim:
            raise ValueError(f"a {v.shape[0]}-dimensional vector for a scheme of {self.dim} dimensions")
        if not np.all(np.isfinite(v)) or not np.any(v):
            return None
        projections = (self._planes.astype(np.float64) @ v.astype(np.float64)).reshape(self.tables, -1)
        return projections >= 0, projections

    def memory_terms(self, vector: npt.ArrayLike) -> tuple[str, ...]:
        """The terms a memory with this embedding stores: each table's bucket at each level (none for a
        zero vector, which has no meaning)."""
        found = self._bits(vector)
        if found is None:
            return ()
        bits, _ = found
        return tuple(_term(t, j, _value(bits[t, :b])) for t in range(self.tables) for j, b in enumerate(self.levels))

    def memory_terms_many(self, vectors: npt.ArrayLike) -> list[tuple[str, ...]]:
        """:meth:`memory_terms` of each row of ``vectors`` (one matrix product for the batch)."""
        m = np.asarray(vectors, dtype=np.float32)
        if m.ndim != 2 or m.shape[1] != self.dim:
            raise ValueError(f"a matrix of {self.dim}-dimensional rows expected, got shape {m.shape}")
        buckets = self.buckets(m)
        empty = ~np.all(np.isfinite(m), axis=1) | ~np.any(m, axis=1)
        return [
            ()
            if empty[i]
            else tuple(_term(t, j, int(buckets[i, t, j])) for t in range(self.tables) for j in range(len(self.levels)))
            for i in range(m.shape[0])
        ]

    def buckets(self, vectors: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Each row's bucket number per table and level, ``(rows, tables, levels)``."""
        m = np.asarray(vectors, dtype=np.float64)
        bits = (m @ self._planes.astype(np.float64).T).reshape(m.shape[0], self.tables, -1) >= 0
        out = np.zeros((m.shape[0], self.tables, len(self.levels)), dtype=np.int64)
        for j, b in enumerate(self.levels):
            weights = 1 << np.arange(b - 1, -1, -1, dtype=np.int64)
            out[:, :, j] = bits[:, :, :b].astype(np.int64) @ weights
        return out

    def query_levels(self, collection_size: int) -> list[int]:
        """Indexes into :attr:`levels` a query of a user with ``collection_size`` memories asks in: every
        level whose buckets hold at most ``max_bucket`` of them on average (the finest at least)."""
        n = max(int(collection_size), 1)
        return [j for j, b in enumerate(self.levels) if n / 2**b <= self.max_bucket] or [len(self.levels) - 1]

    def query_terms(self, vector: npt.ArrayLike, *, collection_size: int, probes: int | None = None) -> list[str]:
        """The terms to ask the engine for: per table and chosen level, the query's own bucket and its
        ``probes`` most likely neighbours (flipping the bits whose projections were nearest zero, singly
        and together, cheapest first; ``probes`` instead of the scheme's). A memory holding more of them
        is likely nearer."""
        asked = self.query_buckets(vector, collection_size=collection_size, probes=probes)
        return list(dict.fromkeys(_term(t, j, value) for (t, j), values in asked.items() for value in values))

    def query_buckets(
        self, vector: npt.ArrayLike, *, collection_size: int, probes: int | None = None
    ) -> dict[tuple[int, int], list[int]]:
        """:meth:`query_terms` as bucket numbers: ``(table, level index) -> [own bucket, probes...]``."""
        found = self._bits(vector)
        if found is None:
            return {}
        bits, projections = found
        margins = np.abs(projections)
        out: dict[tuple[int, int], list[int]] = {}
        for j in self.query_levels(collection_size):
            b = self.levels[j]
            for t in range(self.tables):
                own = bits[t, :b]
                values = [_value(own)]
                for flip in _probes(margins[t, :b], self.probes if probes is None else probes):
                    probe = own.copy()
                    probe[list(flip)] ^= True
                    values.append(_value(probe))
                out[(t, j)] = values
        return out


def _probes(margins: npt.NDArray[np.float64], count: int) -> list[tuple[int, ...]]:
    """The ``count`` sets of bit positions to flip, in order of their summed margins (smallest first)."""
    if count <= 0:
        return []
    candidates = [int(i) for i in np.argsort(margins, kind="stable")[:_PROBE_BITS]]
    sets = [
        combo
        for size in range(1, min(_PROBE_DEPTH, len(candidates)) + 1)
        for combo in itertools.combinations(candidates, size)
    ]
    sets.sort(key=lambda combo: (float(margins[list(combo)].sum()), len(combo)))
    return sets[:count]


def _value(bits: npt.NDArray[np.bool_]) -> int:
    return int.from_bytes(np.packbits(bits, bitorder="big").tobytes(), "big") >> ((-len(bits)) % 8)


def _term(table: int, level: int, value: int) -> str:
    return f"{TERM_PREFIX}{table:x}{_LEVEL_LETTERS[level]}{value:x}"


def is_vector_term(term: str) -> bool:
    """Whether ``term`` has the form of a bucket term (``~`` + table in hex + level letter + bucket in hex)."""
    if not term.startswith(TERM_PREFIX) or len(term) < 4:
        return False
    body = term[1:]
    split = next((i for i, c in enumerate(body) if c in _LEVEL_LETTERS), None)
    if split is None or split == 0 or split == len(body) - 1:
        return False
    return set(body[:split]) <= _HEX and set(body[split + 1 :]) <= _HEX


@lru_cache(maxsize=16)
def default_scheme(embedder: str, dim: int) -> VectorTermScheme:
    """The scheme the store uses for vectors of ``embedder`` (its parameters chosen by measurement)."""
    return VectorTermScheme(embedder=embedder, dim=dim)


def memory_vector_terms(vector: npt.ArrayLike, *, embedder: str) -> tuple[str, ...]:
    """The bucket terms a memory with this embedding (of ``embedder``) stores beside its words."""
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    return default_scheme(embedder, v.shape[0]).memory_terms(v)


def stored_vector_terms(vectors: npt.ArrayLike, *, embedder: str) -> list[str]:
    """The bucket terms of each of ``vectors`` (rows, of ``embedder``) as the engine stores them."""
    rows = np.asarray(vectors, dtype=np.float32)
    if rows.ndim != 2 or not len(rows):
        return []
    return [vector_terms_text(terms) for terms in default_scheme(embedder, rows.shape[1]).memory_terms_many(rows)]


def query_vector_terms(
    vector: npt.ArrayLike, *, embedder: str, collection_size: int, probes: int | None = None
) -> list[str]:
    """The bucket terms a query with this embedding asks the engine for, for a user of
    ``collection_size`` memories: its nearest memories hold the most of them (``probes``: near buckets
    asked per table, instead of the scheme's)."""
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    return default_scheme(embedder, v.shape[0]).query_terms(v, collection_size=collection_size, probes=probes)


def vector_terms_text(terms: Sequence[str]) -> str:
    """Terms as the engine stores them: joined by spaces."""
    return " ".join(terms)
