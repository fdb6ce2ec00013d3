"""The parts of a :class:`~agent_memory.system.MemorySystem` made from settings, each made in one place.

:func:`search_engine` is the search engine the system wires (its analyzer runs on every write of the
repository): a benchmark or a test that needs the engine without the rest of the system builds it
here, so it measures the engine a user gets. :func:`describe_engine` says what an engine was built
with, as a value two engines can be compared by. :class:`SystemOverrides` lists the parts a caller
of :meth:`MemorySystem.build` may replace.
"""

from __future__ import annotations

from dataclasses import dataclass

from autogen_core.models import ChatCompletionClient

from data_layer import ChatLocks, MemoryRepository

from ..formation import statement_topics
from ..search import (
    Embedder,
    FusionWeights,
    HybridMemorySearch,
    SearchAnalyzer,
    SearchMode,
    SnapshotStore,
    embedder_named,
    semantic_share_for,
)
from ..settings import AgentMemorySettings
from ..text import KeywordExtractor


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemOverrides:
    """Parts of a system a caller gives instead of the ones the settings make (``None``: the settings').

    ``database_url`` replaces ``MEMORY_DATABASE_URL``; ``recall_client`` the client
    ``MEMORY_RECALL_MODEL_CLIENT`` names (the offline planner without one) and ``archive_client``
    ``MEMORY_ARCHIVE_MODEL_CLIENT``'s; ``embedder`` the one ``MEMORY_SEARCH_EMBEDDER`` names;
    ``locks`` orders the chat turns and archiving runs of several processes (default: this process's).
    """

    database_url: str | None = None
    recall_client: ChatCompletionClient | None = None
    archive_client: ChatCompletionClient | None = None
    embedder: Embedder | None = None
    locks: ChatLocks | None = None


def settings_embedder(settings: AgentMemorySettings, embedder: Embedder | None = None) -> Embedder | None:
    """``embedder``, else the one ``MEMORY_SEARCH_EMBEDDER`` names (``None``: the hashing embedder, whose
    vectors are computed when needed and never stored)."""
    if embedder is not None:
        return embedder
    return embedder_named(settings.memory_search_embedder, endpoint=settings.embedding_endpoint())


def search_analyzer(settings: AgentMemorySettings, *, embedder: Embedder | None = None) -> SearchAnalyzer:
    """The analysis of every memory write: keywords as the ``MEMORY_EXTRACTION_*`` settings say, the
    profile topics a text states (``statement_topics``) and the vector of ``embedder`` (default: the
    settings')."""
    extractor = KeywordExtractor(
        max_keywords=settings.memory_extraction_max_keywords,
        min_weight=settings.memory_extraction_min_keyword_weight,
    )
    return SearchAnalyzer(extractor=extractor, embedder=settings_embedder(settings, embedder), topics=statement_topics)


def search_engine(
    memory: MemoryRepository,
    settings: AgentMemorySettings,
    *,
    embedder: Embedder | None = None,
    snapshots: SnapshotStore | None = None,
) -> HybridMemorySearch:
    """The search engine of ``memory`` as a :class:`MemorySystem` on ``settings`` wires it, with its
    analyzer installed on ``memory`` (every write gets keywords and search terms in its own transaction).

    ``embedder`` replaces the one the settings name; ``snapshots`` is where built indexes are saved
    (``None``: nowhere; the system passes the store ``MEMORY_SEARCH_INDEX_SNAPSHOT_DIR`` names).
    """
    s = settings
    analyzer = search_analyzer(s, embedder=embedder)
    search = HybridMemorySearch(
        memory,
        analyzer=analyzer,
        semantic_share=semantic_share_for(analyzer.embedder, s.memory_search_semantic_share),
        weights=FusionWeights(
            keyword=s.memory_search_keyword_weight,
            text=s.memory_search_text_similarity_weight,
            time=s.memory_search_time_decay_weight,
        ),
        half_life_days=float(s.memory_search_half_life_days),
        synonym_expansion=s.memory_extraction_enable_synonym_expansion,
        neighbours="packaged" if s.memory_search_word_neighbours else None,
        default_mode=s.memory_search_default_mode,
        snapshots=snapshots,
        index_cache_mb=s.memory_search_index_cache_mb,
        index=s.memory_search_index,
    )
    memory.set_analyzer(search.analyzer)
    return search


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineDescription:
    """What decides a search engine's answers: its analysis (``analyzer`` is the name stored with every
    analysis: tokenizer, keyword extractor, topics), the embedder (its kind, its name, whether its
    vectors are stored with every memory) and the scoring settings."""

    analyzer: str
    topics: bool
    embedder_kind: str
    embedder: str
    stored_vectors: bool
    semantic_share: float
    weights: FusionWeights
    half_life_days: float
    synonym_expansion: bool
    word_neighbours: bool
    default_mode: SearchMode
    link_minutes: float


def describe_engine(search: HybridMemorySearch) -> EngineDescription:
    """The description of ``search`` (two engines that answer alike describe alike)."""
    analyzer = search.analyzer
    return EngineDescription(
        analyzer=analyzer.name,
        topics=analyzer.topics is not None,
        embedder_kind=type(search.embedder).__name__,
        embedder=search.embedder.name,
        stored_vectors=analyzer.embedder is not None,
        semantic_share=search.semantic_share,
        weights=search.weights,
        half_life_days=search.half_life_days,
        synonym_expansion=search.synonym_expansion,
        word_neighbours=search.neighbours is not None,
        default_mode=search.default_mode,
        link_minutes=search.link_minutes,
    )
