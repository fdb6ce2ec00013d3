"""What a process the memory system owns does once it is warm: the loaded tables leave the garbage
collector's full passes.

The tokenizer's dictionaries, the thesaurus and the word vectors are some 150,000 Python objects that
are never garbage; each full collection walks every object the collector tracks, and a bulk write or a
busy server sets one off every few thousand allocations. :func:`freeze_loaded` collects once, then moves
every object the process holds into the collector's permanent generation (:func:`gc.freeze`): later
passes skip them, and they are still freed by reference counting (what is frozen and later becomes
garbage in a reference cycle stays until ``gc.unfreeze()``). It acts on the whole interpreter, so the
library never calls it in a process it does not own: ``agent-memory serve``, the MCP server, the
command line's imports and the benchmarks do, after their warm-up; an application that hosts the
library may call it after its own start-up.
"""

from __future__ import annotations

import gc


def freeze_loaded() -> int:
    """Collect, then freeze every object the process holds; returns how many are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
