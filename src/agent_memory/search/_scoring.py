"""Scoring as small pure functions. Each docstring names its formula; every result is in 0-1 unless said.

These are the pieces :class:`HybridMemorySearch` combines; they hold no state and touch no database.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..domain import MEMORY_TYPES

FloatArray = npt.NDArray[np.float64]

#: Keyword match tiers (exact, prefix, synonym): see ``keyword_tiers`` in ``_components``.
EXACT, PREFIX, SYNONYM = 1.0, 0.8, 0.7


def bm25_idf(n_docs: int, df: npt.ArrayLike) -> FloatArray:
    """Lucene's BM25 idf: ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (never negative)."""
    d = np.asarray(df, dtype=np.float64)
    return np.log1p((n_docs - d + 0.5) / (d + 0.5))


def bm25_tf(tf: npt.ArrayLike, doc_len: npt.ArrayLike, avg_len: float, *, k1: float, b: float) -> FloatArray:
    """BM25 term-frequency saturation: ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``.

    Equals 1 for ``tf = 1`` in a document of average length and tends to ``k1 + 1`` as ``tf`` grows.
    """
    t = np.asarray(tf, dtype=np.float64)
    dl = np.asarray(doc_len, dtype=np.float64)
    norm = k1 * (1.0 - b + b * dl / max(avg_len, 1e-9))
    return t * (k1 + 1.0) / (t + norm)


def normalize_bm25(score: npt.ArrayLike, query_idf_sum: float) -> FloatArray:
    """Absolute BM25 normalisation: ``min(1, score / sum(idf of the query terms))``.

    1.0 means every query term occurs (about once, in a document of average length); the value does
    not depend on the other documents returned, so a threshold means the same in every search.
    """
    s = np.asarray(score, dtype=np.float64)
    if query_idf_sum <= 0:
        return np.zeros_like(s)
    return np.minimum(1.0, s / query_idf_sum)


def time_decay(age_days: npt.ArrayLike, half_life_days: float) -> FloatArray:
    """Exponential decay ``0.5 ** (age / half_life)``; ages below zero count as zero."""
    age = np.maximum(np.asarray(age_days, dtype=np.float64), 0.0)
    return np.power(0.5, age / half_life_days)


def recency(age_days: npt.ArrayLike, half_life_days: float) -> FloatArray:
    """Recency in 0.5-1 (an old memory keeps at least half its score): ``0.5 + 0.5 * time_decay``."""
    return 0.5 + 0.5 * time_decay(age_days, half_life_days)


@dataclass(frozen=True, slots=True)
class FusionWeights:
    """Weights of the hybrid score; they add up to 1 (settings check it)."""

    keyword: float = 0.4
    text: float = 0.4
    time: float = 0.2

    def __post_init__(self) -> None:
        if min(self.keyword, self.text, self.time) < 0 or not math.isclose(
            self.keyword + self.text + self.time, 1.0, abs_tol=1e-6
        ):
            raise ValueError("fusion weights must be non-negative and add up to 1")


def relevance(keyword: npt.ArrayLike, text: npt.ArrayLike, weights: FusionWeights) -> FloatArray:
    """The relevance part: ``(w_kw * keyword + w_text * text) / (w_kw + w_text)``, in 0-1."""
    kw = np.asarray(keyword, dtype=np.float64)
    tx = np.asarray(text, dtype=np.float64)
    share = weights.keyword + weights.text
    if share <= 0:
        return np.zeros(np.broadcast(kw, tx).shape)
    return (weights.keyword * kw + weights.text * tx) / share


def with_time(relevance_: npt.ArrayLike, recency_: npt.ArrayLike, weights: FusionWeights) -> FloatArray:
    """The final score ``R * (w_kw + w_text + w_time * recency)`` for relevance ``R`` in 0-1.

    Equivalently ``w_kw*kw + w_text*text + w_time * recency * R``: the time part is the recency of a
    *match*, so recency re-orders relevant memories but never makes an unrelated memory relevant
    (relevance 0 scores 0). With recency in 0.5-1 a perfect, fresh match scores 1.
    """
    r = np.asarray(relevance_, dtype=np.float64)
    rc = np.asarray(recency_, dtype=np.float64)
    return r * (weights.keyword + weights.text + weights.time * rc)


def calibrate(score: npt.ArrayLike) -> FloatArray:
    """The reported score ``1 - (1 - s)^3`` of a time-weighted relevance ``s`` in 0-1.

    ``s`` is about the share of the query's weighted words a memory covers (each word weighs its idf
    times its general informativeness; every word counts, also one no memory holds; of the whole
    message or of its sentence the memory matches best, see ``Pipeline.lexical``). Cubing the
    shortfall keeps the order and puts the scale where the tools' thresholds read as they are meant: a
    memory holding a fifth of what the message asks about scores 0.5 (related), a third 0.7, half
    of it 0.87 (strong), all of it 1; an unrelated memory 0. Every threshold (``min_relevance_score``,
    the recall's similarity threshold, the round plan) is on this scale.
    """
    s = np.clip(np.asarray(score, dtype=np.float64), 0.0, 1.0)
    return 1.0 - np.power(1.0 - s, 3)


#: Type priority of the ranker (user_preference > command_output > general): the memory-type table's.
TYPE_PRIORITY: dict[str, float] = {t.name: t.priority for t in MEMORY_TYPES}


def interaction_score(access_count: int, days_since_access: float | None, *, half_life_days: float = 30.0) -> float:
    """How much the user has used a memory: ``0.5 * log1p(count)/log1p(20)`` (capped at 0.5) plus
    ``0.5 * time_decay(days since last access)``; 0 for a memory never read."""
    if access_count <= 0 or days_since_access is None:
        return 0.0
    frequency = min(1.0, math.log1p(access_count) / math.log1p(20))
    fresh = float(time_decay(days_since_access, half_life_days))
    return 0.5 * frequency + 0.5 * fresh


def top_k(scores: FloatArray, k: int, tie_key: Callable[[int], Any] | None = None) -> list[int]:
    """Indices of the ``k`` highest positive scores, highest first; scores equal to 1e-9 are ordered
    by ``tie_key(index)`` (else by index), so every backend returns the same order."""
    positive = np.flatnonzero(scores > 0)
    if positive.size == 0 or k <= 0:
        return []
    if positive.size > k:
        part = positive[np.argpartition(-scores[positive], k - 1)[:k]]
        cutoff = scores[part].min()
        positive = positive[scores[positive] >= cutoff - 1e-9]
    key = tie_key or int
    ranked = sorted((int(i) for i in positive), key=lambda i: (-round(float(scores[i]), 9), key(i)))
    return ranked[:k]
