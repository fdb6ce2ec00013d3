"""A search whose index is read from the store's engine for each query: nothing kept per user.

The store's engine (FTS5 on SQLite, GIN-indexed ``tsvector`` columns on PostgreSQL: see
:mod:`data_layer._memory_search`) holds every analysed memory's terms, keyword terms and vector bucket
terms, written in the memory's own transaction, and the user's collection statistics. One search:

1. reads the user's statistics and the document frequencies of the query's words and of every synonym
   they may expand to (the synonyms a memory holds are those with a frequency);
2. asks the engine for the memories holding the words, their synonyms or a word they begin
   (:data:`WORD_CANDIDATES`, the engine's own BM25 order), and, with stored vectors, for the memories
   nearest the query in meaning (:data:`MEANING_CANDIDATES`, by shared bucket terms);
3. reads those memories' rows and the turns around each in its conversation session (the neighbours a
   memory is found through), and the frequencies of the terms they hold;
4. ranks them with the same stages as the per-process index (:mod:`._pipeline`), over a
   :class:`~._store_index.CandidateIndex` whose statistics are the user's whole collection's.

A write is therefore visible to the next search in any process, and a process holds nothing of a user
after the search.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, TypedDict

from data_layer import IndexState, Scope, SessionTurn

from . import _components as c
from ._index import IndexedMemory, turn_order
from ._index_arrays import NEIGHBOUR_WEIGHTS
from ._pipeline import Pipeline, SearchResults, expanded_terms
from ._query import SearchQuery
from ._store_index import CandidateIndex
from ._vector_terms import query_vector_terms

if TYPE_CHECKING:
    from ._engine import HybridMemorySearch

#: Most memories the engine returns for the query's words (best first by its BM25).
WORD_CANDIDATES = 300
#: Most memories the engine returns as nearest in meaning (most shared bucket terms first).
MEANING_CANDIDATES = 150
#: Near buckets asked per table beside the query's own: each adds a posting list per table to the
#: engine's walk, and the nearest memories hold the query's own buckets too (:mod:`._vector_terms`).
MEANING_PROBES = 0
#: Turns on each side of a candidate read as its neighbours (the neighbour fields' reach); one more
#: after it, the reply to a question among them (:func:`~._components.lift_replies`).
WINDOW = len(NEIGHBOUR_WEIGHTS)


def _window(turns: Sequence[SessionTurn], seeds: set[uuid.UUID]) -> list[uuid.UUID]:
    """The turns within :data:`WINDOW` places of a seed in their session (one more after it), each
    session in turn order."""
    sessions: dict[tuple[str | None, str], list[SessionTurn]] = {}
    for turn in turns:
        sessions.setdefault((turn.friend_id, turn.session), []).append(turn)
    kept: list[uuid.UUID] = []
    for members in sessions.values():
        members.sort(key=lambda t: (t.created_at.timestamp(), turn_order(t.memory_key)))
        near: set[int] = set()
        for i, turn in enumerate(members):
            if turn.id in seeds:
                near.update(range(max(0, i - WINDOW), min(len(members), i + WINDOW + 2)))
        kept.extend(members[i].id for i in sorted(near))
    return kept


async def _analysed(engine: HybridMemorySearch, uid: str, ids: list[uuid.UUID]) -> list[IndexedMemory]:
    """What an index keeps of each of the user's active memories among ``ids``: their revisions read,
    then the stored analysis of those not in the engine's short-lived cache (keyed by revision, so a
    memory written again is read again)."""
    revisions = await engine.memory.memory_revisions(user_id=uid, ids=ids)
    cache, now = engine._analysed, time.monotonic()
    found: dict[uuid.UUID, IndexedMemory] = {}
    missing: list[uuid.UUID] = []
    for mid, revision in revisions.items():
        hit = cache.get((uid, mid.int, revision), now=now)
        if hit is None:
            missing.append(mid)
        else:
            found[mid] = hit
    if missing:
        for row in await engine.memory.memory_rows(user_id=uid, ids=missing):
            indexed = engine._indexed(row)
            if indexed is not None:
                found[row.id] = indexed
                cache.put((uid, row.id.int, row.revision), indexed, now=now)
    return [found[mid] for mid in revisions if mid in found]


class _Filters(TypedDict):
    """A query's filters as the engine's candidate reads take them."""

    scope: Scope
    memory_types: Sequence[str] | None
    start: datetime | None
    end: datetime | None


async def store_search(engine: HybridMemorySearch, query: SearchQuery, state: IndexState) -> SearchResults:
    """The hits of ``query`` from the store's engine (the module docs); ``state``: the user's change
    counters as the caller read them (the synonym table's revision keys the synonyms' cache)."""
    memory = engine.memory
    uid = query.scope.user_id
    tokenizer = engine.analyzer.tokenizer
    collection = await memory.memory_collection(user_id=uid)
    if collection.memories == 0:
        return SearchResults()
    terms = list(c.query_terms(tokenizer.tokens(query.text)))
    expand = query.mode != "semantic" and engine.synonym_expansion
    plain = [t for t in terms if len(t) <= 100 and t.isprintable()]  # what the engine expands
    mapped = await engine._mapped_synonyms(plain, state.vocabulary_revision) if expand else {}
    near = engine.neighbours if expand else None
    nearby: dict[str, list[str]] = {}
    if near is not None and plain:
        await engine._prepare_neighbours(plain)
        nearby = {t: list(near.related(t)) for t in plain}
    asked = set(terms)
    for similar in mapped.values():
        asked.update(similar)
    for listed in nearby.values():
        asked.update(listed)
    frequencies = await memory.memory_term_frequencies(user_id=uid, terms=sorted(asked)) if asked else {}
    synonyms = engine._held_synonyms_of(plain, mapped, frequencies.__contains__) if expand else {}
    words = list(dict.fromkeys([*terms, *(s for held in synonyms.values() for s in held)]))
    alone = query.time_alone()
    filters = _Filters(scope=query.scope, memory_types=query.memory_types, start=query.start, end=query.end)
    ids: list[uuid.UUID] = []
    if alone is not None:
        ids = await memory.memory_ids_in_range(
            user_id=uid,
            scope=query.scope,
            memory_types=query.memory_types,
            start=max(alone.start, query.start) if query.start else alone.start,
            end=min(alone.end, query.end) if query.end else alone.end,
            limit=WORD_CANDIDATES,
        )
    elif words and query.mode != "semantic":
        prefixes = [t for t in terms if len(t) >= c.min_prefix(t)]
        ids = await memory.memory_candidates(
            user_id=uid,
            terms=words,
            keyword_terms=words,
            prefixes=prefixes,
            limit=WORD_CANDIDATES,
            **filters,
        )
    meaning: list[uuid.UUID] = []
    wants_meaning = query.mode == "semantic" or (query.mode == "hybrid" and engine.semantic_share > 0)
    if alone is None and wants_meaning and engine._vectors_stored:
        try:
            vector = await engine.query_vector(query.text)
        except Exception:
            vector = None  # the pipeline's semantic stage logs it (hybrid) or raises (semantic)
        if vector is not None:
            buckets = query_vector_terms(
                vector, embedder=engine.embedder.name, collection_size=collection.memories, probes=MEANING_PROBES
            )
            meaning = await memory.memory_vector_candidates(
                user_id=uid,
                vector_terms=buckets,
                limit=MEANING_CANDIDATES,
                **filters,
            )
    seeds = list(dict.fromkeys([*ids, *meaning]))
    if not seeds:
        return SearchResults(expanded=expanded_terms(terms, synonyms) if query.mode != "semantic" else ())
    around = _window(await memory.memory_session_turns(user_id=uid, ids=ids), set(ids)) if ids else []
    memories = await _analysed(engine, uid, list(dict.fromkeys([*seeds, *around])))
    index = CandidateIndex(
        memories=collection.memories,
        frequencies=frequencies,
        link_minutes=engine.link_minutes,
        embedding_dim=engine.embedder.dim,
    )
    if engine.embedding is not None and any(m.embedding is None for m in memories):
        engine.embedding.request(uid)  # a bulk write leaves its vectors to a background pass: start one
    # a session's turns are one friend's: in the scope of the seed they are read for
    index.put_many(memories)
    held = {t for m in memories for t in m.terms} - frequencies.keys()
    if held:
        index.add_frequencies(await memory.memory_term_frequencies(user_id=uid, terms=sorted(held)))
    return await Pipeline(engine, index).run(query, synonyms)
