"""The memory system a benchmark measures: the one a user's settings build (``MemorySystem.build``),
on the benchmark's database, offline.

A benchmark never wires the engine itself: what it measures is what a user of the same settings gets
(the same analysis with statement topics, embedder, semantic share, weights and word neighbours).
"""

from __future__ import annotations

from typing import Any

from ..settings import AgentMemorySettings, load_settings
from ..system import EngineDescription, MemorySystem, SystemOverrides


def bench_settings(url: str, **settings: Any) -> AgentMemorySettings:
    """The environment's settings with ``settings`` (field names of :class:`AgentMemorySettings`) on
    the database ``url``: offline (no model client for the recall or archiving, whatever the
    environment names), and no search index saved for the temporary database (no folder is left behind;
    the indexes answer the same)."""
    offline: dict[str, Any] = {
        "memory_recall_model_client": "",
        "memory_archive_model_client": "",
        "memory_search_index_snapshot_dir": "off",
    }
    return load_settings(**{**offline, **settings, "memory_database_url": url})


def bench_system(url: str, settings: AgentMemorySettings | None = None) -> MemorySystem:
    """The memory system of ``settings`` (default: :func:`bench_settings`) on the database ``url``."""
    chosen = settings if settings is not None else bench_settings(url)
    return MemorySystem.build(chosen, overrides=SystemOverrides(database_url=url))


def engine_settings(
    url: str, *, embedder: str, semantic_share: float | None = None, word_neighbours: bool = True
) -> AgentMemorySettings:
    """:func:`bench_settings` of a user who sets the search's embedder (one of ``EMBEDDERS``), its semantic
    share (``None``: the library's default for the embedder) and the word neighbours."""
    from ..search import EMBEDDERS, embedder_named

    if embedder not in EMBEDDERS:
        embedder_named(embedder)  # the search's own refusal, naming the embedders there are
    chosen: dict[str, Any] = {"memory_search_embedder": embedder, "memory_search_word_neighbours": word_neighbours}
    if semantic_share is not None:
        chosen["memory_search_semantic_share"] = semantic_share
    return bench_settings(url, **chosen)


def engine_label(engine: EngineDescription) -> str:
    """The embedder a report names: the one whose vectors are stored, or ``hashing``."""
    return engine.embedder if engine.stored_vectors else "hashing"
