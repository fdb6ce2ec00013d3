"""Hybrid memory search: keyword tiers, text similarity (BM25F, tf-idf), embeddings and time decay.

>>> from agent_memory.search import HybridMemorySearch
>>> search = HybridMemorySearch(layer.memory)  # doctest: +SKIP
>>> [h.memory_key for h in await search.search("MySQL 配置", user_id="u1")]  # doctest: +SKIP
['db-config-001']
"""

from ._analyzer import SearchAnalyzer, fill_keyword_terms, memory_text
from ._embeddings import (
    DEFAULT_SEMANTIC_SHARE,
    EMBEDDERS,
    Embedder,
    HashingEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    above_floor,
    embedder_named,
    reads_sentences,
    semantic_share_for,
    similarity_floor,
)
from ._engine import CacheTTL, HybridMemorySearch
from ._index import IndexedMemory, UserIndex
from ._model import MemoryInfo, MemoryModel
from ._pipeline import Pipeline, SearchHit, SearchResults
from ._process import freeze_loaded
from ._query import MAX_QUERY_CHARS, SEARCH_MODES, SearchMode, SearchQuery, is_search_mode
from ._ranker import SearchResultRanker
from ._reembed import fill_vector_terms
from ._scoring import FusionWeights, bm25_idf, bm25_tf
from ._sentence_encoder import SentenceEncoderEmbedder, sentence_encoder_installed
from ._snapshot import SnapshotError, SnapshotStore, snapshot_folder
from ._vector_terms import VectorTermScheme, memory_vector_terms, query_vector_terms
from ._word_neighbours import WordNeighbours, packaged_neighbours
from ._word_vectors import WordVectorEmbedder, WordVectors, packaged_word_vectors

__all__ = [
    "DEFAULT_SEMANTIC_SHARE",
    "EMBEDDERS",
    "MAX_QUERY_CHARS",
    "SEARCH_MODES",
    "CacheTTL",
    "Embedder",
    "FusionWeights",
    "HashingEmbedder",
    "HybridMemorySearch",
    "IndexedMemory",
    "MemoryInfo",
    "MemoryModel",
    "OpenAIEmbedder",
    "Pipeline",
    "SearchAnalyzer",
    "SearchHit",
    "SearchMode",
    "SearchQuery",
    "SearchResultRanker",
    "SearchResults",
    "SentenceEncoderEmbedder",
    "SentenceTransformerEmbedder",
    "SnapshotError",
    "SnapshotStore",
    "UserIndex",
    "VectorTermScheme",
    "WordNeighbours",
    "WordVectorEmbedder",
    "WordVectors",
    "above_floor",
    "bm25_idf",
    "bm25_tf",
    "embedder_named",
    "fill_keyword_terms",
    "fill_vector_terms",
    "freeze_loaded",
    "is_search_mode",
    "memory_text",
    "memory_vector_terms",
    "packaged_neighbours",
    "packaged_word_vectors",
    "query_vector_terms",
    "reads_sentences",
    "semantic_share_for",
    "sentence_encoder_installed",
    "similarity_floor",
    "snapshot_folder",
]
