"""Build the search (and the analysis it installs on writes) from :class:`AgentMemorySettings`.

>>> search = search_from_settings(layer.memory)  # doctest: +SKIP
"""

from __future__ import annotations

from data_layer import MemoryRepository

from ..settings import AgentMemorySettings, get_settings
from ..text import KeywordExtractor
from ._analyzer import SearchAnalyzer
from ._embeddings import Embedder
from ._engine import HybridMemorySearch
from ._scoring import FusionWeights


def search_from_settings(
    memory: MemoryRepository,
    settings: AgentMemorySettings | None = None,
    *,
    embedder: Embedder | None = None,
) -> HybridMemorySearch:
    """A :class:`HybridMemorySearch` with the ``MEMORY_SEARCH_*`` and ``MEMORY_EXTRACTION_*`` settings;
    it installs keyword extraction on ``memory``'s writes. ``embedder`` (optional) is stored per memory."""
    s = settings or get_settings()
    extractor = KeywordExtractor(
        max_keywords=s.memory_extraction_max_keywords, min_weight=s.memory_extraction_min_keyword_weight
    )
    return HybridMemorySearch(
        memory,
        analyzer=SearchAnalyzer(extractor=extractor, embedder=embedder),
        weights=FusionWeights(
            keyword=s.memory_search_keyword_weight,
            text=s.memory_search_text_similarity_weight,
            time=s.memory_search_time_decay_weight,
        ),
        half_life_days=float(s.memory_search_half_life_days),
        synonym_expansion=s.memory_extraction_enable_synonym_expansion,
        default_mode=s.memory_search_default_mode,
    )
