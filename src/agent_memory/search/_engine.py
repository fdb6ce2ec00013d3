"""Hybrid memory search: keyword tiers + text similarity (BM25F and tf-idf) + time decay, per user.

>>> search = HybridMemorySearch(layer.memory)  # doctest: +SKIP
>>> hits = await search.search("数据库配置", user_id="u1", friend_id="xiaozhu", limit=5)  # doctest: +SKIP
>>> hits[0].memory_key, hits[0].score  # doctest: +SKIP
('db-config-001', 0.91)

Every search first reads the user's change counter (one indexed row); when it moved, the rows that
changed since the index was built are read and applied, so a write is visible to the next search.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal, get_args

import numpy as np
from cachetools import TTLCache

from data_layer import InvalidInputError, MemoryRecord, MemoryRepository, scope_id

from ..text import query_time_range
from . import _components as c
from ._analyzer import SearchAnalyzer
from ._embeddings import Embedder, HashingEmbedder, from_bytes
from ._index import IndexedMemory, UserIndex
from ._ranker import SearchResultRanker
from ._scoring import FusionWeights, bm25_idf, normalize_bm25, recency, relevance, top_k, with_time

SearchMode = Literal["keyword", "semantic", "hybrid"]
SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)
#: Longest query accepted (characters); longer text should be summarised or split first.
MAX_QUERY_CHARS = 4_000
#: How many of the best candidates are fetched, ranked and re-ordered for coverage.
RERANK_DEPTH = 30


@dataclass(frozen=True, slots=True)
class CacheTTL:
    """Lifetimes in seconds of the caches of seed 000 section 6.1."""

    keyword_expansion: float = 300.0
    recent_searches: float = 60.0
    hot_memories: float = 600.0


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result: the stored memory, its relevance ``score`` (0-1) and how it was made up.

    ``score`` is what ``min_relevance_score`` is compared with; ``rank_score`` (relevance 70 %,
    interaction 20 %, type 10 %) orders the results together with query coverage.
    """

    record: MemoryRecord
    score: float
    rank_score: float
    keyword: float
    text: float
    semantic: float
    recency: float
    keywords: tuple[str, ...] = ()

    @property
    def memory_key(self) -> str:
        """The memory's key."""
        return self.record.memory_key

    @property
    def summary(self) -> str:
        """The memory's summary."""
        return self.record.summary


@dataclass(slots=True)
class _UserState:
    index: UserIndex
    revision: int = -1
    hard_delete_revision: int = 0
    vocabulary_revision: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class HybridMemorySearch:
    """Searches one repository's memories; keeps an in-memory index per user, synced by revision.

    Options are keyword-only: ``weights`` (keyword / text / time, default 0.4 / 0.4 / 0.2),
    ``half_life_days`` of the time decay, ``analyzer`` (tokens, keywords, embedding stored on write;
    it is installed on the repository), ``embedder`` for semantic mode when the analyzer has none,
    ``semantic_share`` (part of the text score given to embedding similarity in hybrid mode),
    ``synonym_expansion`` (use ``keyword_synonyms``), ``ranker`` and ``cache_ttl``.
    """

    def __init__(
        self,
        memory: MemoryRepository,
        *,
        analyzer: SearchAnalyzer | None = None,
        embedder: Embedder | None = None,
        weights: FusionWeights | None = None,
        half_life_days: float = 30.0,
        semantic_share: float = 0.0,
        synonym_expansion: bool = True,
        ranker: SearchResultRanker | None = None,
        cache_ttl: CacheTTL | None = None,
        link_minutes: float = 30.0,
        default_mode: SearchMode = "hybrid",
    ) -> None:
        if half_life_days <= 0:
            raise ValueError("half_life_days must be positive")
        if not 0.0 <= semantic_share <= 1.0:
            raise ValueError("semantic_share must be between 0 and 1")
        if default_mode not in SEARCH_MODES:
            raise ValueError(f"default_mode must be one of {', '.join(SEARCH_MODES)}")
        self.memory = memory
        self.analyzer = analyzer or SearchAnalyzer(embedder=embedder)
        self.embedder: Embedder = self.analyzer.embedder or embedder or HashingEmbedder()
        # a model's vectors are stored on write and reused; the hashing default is computed from the
        # stored terms when semantic search first needs it (cheaper than storing it)
        self._vectors_stored = self.analyzer.embedder is not None
        self.weights = weights or FusionWeights()
        self.half_life_days = half_life_days
        self.semantic_share = semantic_share
        self.synonym_expansion = synonym_expansion
        self.ranker = ranker or SearchResultRanker(half_life_days=half_life_days)
        self.link_minutes = link_minutes
        self.default_mode: SearchMode = default_mode
        ttl = cache_ttl or CacheTTL()
        self._synonyms: TTLCache[tuple[int, str], dict[str, float]] = TTLCache(20_000, ttl.keyword_expansion)
        self._recent: TTLCache[Hashable, list[SearchHit]] = TTLCache(4_096, ttl.recent_searches)
        self._hot: TTLCache[tuple[str, uuid.UUID, int], MemoryRecord] = TTLCache(50_000, ttl.hot_memories)
        self._row_revision: dict[str, dict[uuid.UUID, int]] = {}
        self._users: dict[str, _UserState] = {}
        self._keyword_cache: dict[str, tuple[str, ...]] = {}
        memory.set_analyzer(self.analyzer)

    # -- index maintenance -------------------------------------------------------------------------

    async def refresh(self, *, user_id: str | int) -> UserIndex:
        """Bring the user's index up to date with storage (searches do this themselves)."""
        uid = _user(user_id)
        current = self._users.setdefault(uid, _UserState(UserIndex(link_minutes=self.link_minutes)))
        async with current.lock:
            return await self._refresh_locked(uid, current)

    async def _refresh_locked(self, uid: str, current: _UserState) -> UserIndex:
        state = await self.memory.index_state(user_id=uid)
        current.vocabulary_revision = state.vocabulary_revision
        if current.revision == state.revision and current.hard_delete_revision == state.hard_delete_revision:
            return current.index
        for _ in range(3):
            stale = await self._apply_changes(uid, current)
            if not stale:
                break
            await self.reanalyze(user_id=uid)
        return current.index

    async def _apply_changes(self, uid: str, user: _UserState) -> int:
        state = await self.memory.index_state(user_id=uid)
        if user.revision == state.revision and user.hard_delete_revision == state.hard_delete_revision:
            return 0
        rows = await self.memory.index_rows(user_id=uid, after_revision=user.revision, active_only=user.revision < 0)
        revisions = self._row_revision.setdefault(uid, {})
        stale = 0
        dim = self.embedder.dim
        if user.index.embedding_dim is None:
            user.index.embedding_dim = dim
        for row in rows:
            revisions[row.id] = row.revision
            if not row.is_active:
                user.index.remove(row.id)
                continue
            if row.analyzer != self.analyzer.name or row.tokens is None:
                user.index.remove(row.id)
                stale += 1
                continue
            vector = from_bytes(row.embedding, dim) if row.embedding and row.embedder == self.embedder.name else None
            user.index.put(
                IndexedMemory(
                    id=row.id,
                    memory_key=row.memory_key,
                    friend_id=row.friend_id,
                    memory_type=row.memory_type,
                    created_at=row.created_at,
                    terms=tuple(row.tokens.split()),
                    keywords=self._keyword_terms(row.keywords),
                    embedding=vector,
                )
            )
        if state.hard_delete_revision != user.hard_delete_revision and user.revision >= 0:
            alive = await self.memory.active_ids(user_id=uid)
            for gone in user.index.ids() - alive:
                user.index.remove(gone)
        user.revision = max([state.revision, *(r.revision for r in rows)])
        user.hard_delete_revision = state.hard_delete_revision
        return stale

    def _keyword_terms(self, keywords: Sequence[tuple[str, float]]) -> tuple[tuple[str, float], ...]:
        """Stored keywords as search terms (a tag "machine learning" becomes "machin", "learn")."""
        out: list[tuple[str, float]] = []
        for word, weight in keywords:
            terms = self._keyword_cache.get(word)
            if terms is None:
                terms = tuple(self.analyzer.tokenizer.unique_tokens(word))
                if len(self._keyword_cache) < 200_000:
                    self._keyword_cache[word] = terms
            out.extend((t, weight) for t in terms)
        return tuple(out)

    async def reanalyze(self, *, user_id: str | int, batch: int = 500) -> int:
        """Analyse the user's memories stored without (or with another) analysis; returns how many."""
        uid = _user(user_id)
        done = 0
        while True:
            records = await self.memory.pending_analysis(user_id=uid, analyzer=self.analyzer.name, limit=batch)
            if not records:
                return done
            analyses = await self.analyzer.analyze_records(records)
            done += await self.memory.store_analysis(
                user_id=uid, analyses=[(r.id, a) for r, a in zip(records, analyses, strict=True)]
            )
            if len(records) < batch:
                return done

    def forget(self, *, user_id: str | int) -> None:
        """Drop the user's in-memory index and cached results (rebuilt from storage by the next search).

        Reads (``access_count``) do not change a memory's revision, so the ranker sees them once the
        cached record expires (10 minutes) or after this call.
        """
        uid = _user(user_id)
        self._users.pop(uid, None)
        self._row_revision.pop(uid, None)
        for key in [k for k in list(self._hot.keys()) if k[0] == uid]:
            self._hot.pop(key, None)
        for key in [k for k in list(self._recent.keys()) if isinstance(k, tuple) and k[0] == uid]:
            self._recent.pop(key, None)

    # -- search ------------------------------------------------------------------------------------

    async def search(
        self,
        query: str,
        *,
        user_id: str | int,
        friend_id: str | int | None = None,
        include_shared: bool = True,
        mode: SearchMode | None = None,
        keywords: Sequence[str] | None = None,
        memory_types: Sequence[str] | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        time_range_days: int | None = None,
        use_time_expressions: bool = False,
        limit: int = 10,
        min_relevance_score: float = 0.0,
        now: datetime | None = None,
    ) -> list[SearchHit]:
        """The user's memories that best match ``query``, best first (at most ``limit``, 1-100).

        ``friend_id`` restricts to that AI friend's memories plus the user's shared ones
        (``include_shared``); ``memory_types``, ``start``/``end`` (or ``time_range_days`` back from
        ``now``) filter; ``use_time_expressions`` also restricts to a time named in the query
        ("上周", "in May 2023"). ``keywords`` are extra query keywords. Scores are 0-1 and
        ``min_relevance_score`` drops weaker results.
        """
        uid = _user(user_id)
        text = _query_text(query, keywords)
        chosen_mode = mode or self.default_mode
        if chosen_mode not in SEARCH_MODES:
            raise InvalidInputError(f"mode must be one of {', '.join(SEARCH_MODES)}, not {chosen_mode!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
            raise InvalidInputError(f"limit must be an integer from 1 to 100, not {limit!r}")
        if isinstance(min_relevance_score, bool) or not isinstance(min_relevance_score, int | float):
            raise InvalidInputError("min_relevance_score must be a number from 0 to 1")
        if not 0.0 <= float(min_relevance_score) <= 1.0 or math.isnan(float(min_relevance_score)):
            raise InvalidInputError(f"min_relevance_score must be from 0 to 1, not {min_relevance_score!r}")
        when = _aware(now, "now") or datetime.now(UTC)
        start, end = _aware(start, "start"), _aware(end, "end")
        if time_range_days is not None:
            if isinstance(time_range_days, bool) or not isinstance(time_range_days, int) or time_range_days < 1:
                raise InvalidInputError("time_range_days must be a positive whole number of days")
            since = when - timedelta(days=time_range_days)
            start = max(start, since) if start else since
        if use_time_expressions:
            named = query_time_range(text, now=when)
            if named is not None:
                start = max(start, named.start) if start else named.start
                end = min(end, named.end) if end else named.end
        friend = scope_id(friend_id, name="friend_id", optional=True)
        types = tuple(sorted(set(memory_types))) if memory_types else None

        state = self._users.setdefault(uid, _UserState(UserIndex(link_minutes=self.link_minutes)))
        # the whole search holds the user's lock: a concurrent refresh must not move slots (a freed
        # slot could be reused by another friend's memory) while this search still reads them
        async with state.lock:
            index = await self._refresh_locked(uid, state)
            key = (uid, state.revision, state.hard_delete_revision, state.vocabulary_revision, text, friend,
                   include_shared, chosen_mode, types, start, end, limit, float(min_relevance_score),
                   when.replace(second=0, microsecond=0))  # fmt: skip
            cached = self._recent.get(key)
            if cached is not None:
                return list(cached)
            hits = await self._search(
                index, state, uid, text, chosen_mode, friend, include_shared, types, start, end, limit,
                min_relevance_score, when,
            )  # fmt: skip
            hits = [h for h in hits if _in_scope(h.record, uid, friend, include_shared)]
        self._recent[key] = hits
        return list(hits)

    async def _search(
        self,
        index: UserIndex,
        state: _UserState,
        uid: str,
        text: str,
        mode: str,
        friend: str | None,
        include_shared: bool,
        types: Sequence[str] | None,
        start: datetime | None,
        end: datetime | None,
        limit: int,
        threshold: float,
        now: datetime,
    ) -> list[SearchHit]:
        if index.size == 0:
            return []
        mask = index.mask(friend_id=friend, include_shared=include_shared, memory_types=types, start=start, end=end)
        if not mask.any():
            return []
        terms = c.query_terms(self.analyzer.tokenizer.tokens(text))
        zeros = np.zeros(index.capacity)
        kw = text_score = sem = zeros
        idf = index.bm25_idf(terms)  # terms found in the index only
        if mode in ("keyword", "hybrid") and terms:
            # every query term weighs, found or not (an unknown word lowers the coverage)
            weights = dict(zip(terms, bm25_idf(index.size, [index.document_frequency(t) for t in terms]).tolist(),
                               strict=True))  # fmt: skip
            synonyms = (
                await self._synonyms_for(list(terms), state.vocabulary_revision)
                if self.synonym_expansion and state.vocabulary_revision > 0
                else {}
            )
            kw = c.keyword_tiers(index, weights, synonyms=synonyms)
        if mode == "hybrid" and terms:
            bm = normalize_bm25(c.bm25f(index, terms, idf=idf), c.bm25_ceiling(index, terms, idf=idf))
            text_score = 0.5 * bm + 0.5 * np.minimum(1.0, c.tfidf_cosine(index, terms))
        if mode == "semantic" or (mode == "hybrid" and self.semantic_share > 0):
            await self._ensure_vectors(index)
            vector = (await self.embedder.embed([text]))[0]
            sem = c.semantic(index, vector)
            if mode == "hybrid":
                text_score = (1 - self.semantic_share) * text_score + self.semantic_share * sem
        if mode == "keyword":
            rel = kw
        elif mode == "semantic":
            rel = sem
        else:
            rel = relevance(kw, text_score, self.weights)
        rel = np.where(mask, rel, 0.0)
        if mode != "semantic" and terms:
            rel = c.propagate(index, rel, terms, mask)
        related = np.flatnonzero(rel > 0)
        fresh = np.zeros(index.capacity)
        fresh[related] = recency((now.timestamp() - index.arrays()["ts"][related]) / 86_400.0, self.half_life_days)
        scores = np.zeros(index.capacity)
        scores[related] = with_time(rel[related], fresh[related], self.weights)
        scores[scores < max(threshold, 1e-12)] = 0.0
        ordered = top_k(scores, max(limit, RERANK_DEPTH), tie_key=index.tie_key)
        if not ordered:
            return []
        keys = {i: index.tie_key(i) for i in ordered}
        records = await self._records(uid, index, ordered)
        rank = {
            slot: self.ranker.score(
                relevance=float(scores[slot]),
                access_count=records[slot].access_count,
                last_accessed_at=records[slot].last_accessed_at,
                memory_type=records[slot].memory_type,
                now=now,
            )
            for slot in ordered
            if slot in records
        }
        ordered = sorted(rank, key=lambda s: (-rank[s], -round(float(scores[s]), 9), keys[s]))
        if mode != "semantic" and terms:
            rank_vector = np.zeros(index.capacity)
            rank_vector[ordered] = [rank[s] for s in ordered]
            ordered = c.coverage_rerank(index, rank_vector, idf, ordered)
        return [
            SearchHit(
                record=records[s],
                score=round(float(scores[s]), 6),
                rank_score=rank[s],
                keyword=round(float(kw[s]), 6),
                text=round(float(text_score[s]), 6),
                semantic=round(float(sem[s]), 6),
                recency=round(float(fresh[s]), 6),
                keywords=tuple(dict.fromkeys(k for k, _ in index.memory(s).keywords)),
            )
            for s in ordered[:limit]
        ]

    async def _ensure_vectors(self, index: UserIndex) -> None:
        if self._vectors_stored:
            return
        missing = index.missing_embeddings()
        for start in range(0, len(missing), 1000):
            chunk = missing[start : start + 1000]
            vectors = await self.embedder.embed([" ".join(m.terms) for m in chunk])
            for memory, vector in zip(chunk, vectors, strict=True):
                index.set_embedding(memory.id, vector)

    async def _records(self, uid: str, index: UserIndex, slots: Sequence[int]) -> dict[int, MemoryRecord]:
        revisions = self._row_revision.get(uid, {})
        found: dict[int, MemoryRecord] = {}
        missing: dict[uuid.UUID, int] = {}
        for slot in slots:
            mid = index.memory(slot).id
            assert isinstance(mid, uuid.UUID)
            hot = self._hot.get((uid, mid, revisions.get(mid, -1)))
            if hot is not None:
                found[slot] = hot
            else:
                missing[mid] = slot
        if missing:
            for record in await self.memory.get_by_ids(user_id=uid, ids=list(missing)):
                if record.is_active:
                    found[missing[record.id]] = record
                    self._hot[(uid, record.id, revisions.get(record.id, -1))] = record
        return found

    async def _synonyms_for(self, terms: Sequence[str], vocab: int) -> dict[str, dict[str, float]]:
        result: dict[str, dict[str, float]] = {}
        missing = []
        for term in terms:
            if len(term) > 100 or not term.isprintable():
                continue  # keyword_synonyms holds words of at most 100 characters
            hit = self._synonyms.get((vocab, term))
            if hit is None:
                missing.append(term)
            elif hit:
                result[term] = hit
        if missing:
            found = await self.memory.synonyms_for(missing)
            for term in missing:
                mapped: dict[str, float] = {}
                for syn in found.get(term, []):
                    for token in self.analyzer.tokenizer.unique_tokens(syn.synonym)[:1]:
                        mapped[token] = max(mapped.get(token, 0.0), float(syn.similarity_score))
                self._synonyms[(vocab, term)] = mapped
                if mapped:
                    result[term] = mapped
        return result


def _in_scope(record: MemoryRecord, uid: str, friend: str | None, include_shared: bool) -> bool:
    """A last check on every result: the user's own, active, and in the friend scope."""
    if record.user_id != uid or not record.is_active:
        return False
    if friend is None:
        return True
    return record.friend_id == friend or (include_shared and record.friend_id is None)


def _user(value: str | int, name: str = "user_id") -> str:
    """A required scope id, validated like the data layer's (str or int, 1-128 characters)."""
    result = scope_id(value, name=name)
    assert result is not None
    return result


def _query_text(query: str, keywords: Sequence[str] | None) -> str:
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string, not {type(query).__name__}")
    extra = []
    for word in keywords or ():
        if not isinstance(word, str):
            raise InvalidInputError("keywords must be strings")
        if len(word) > 100:
            raise InvalidInputError("a keyword is at most 100 characters")
        extra.append(word)
    text = " ".join([query.strip(), *extra]).strip()
    if not text:
        raise InvalidInputError("query is empty: give some words to search for")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidInputError(f"query is {len(text)} characters; at most {MAX_QUERY_CHARS} are searched, shorten it")
    return text


def _aware(value: datetime | None, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{name} must be a datetime")
    if value.tzinfo is None:
        raise InvalidInputError(f"{name} must be timezone-aware (for example datetime.now(UTC))")
    return value
