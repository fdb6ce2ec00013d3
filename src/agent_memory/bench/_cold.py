"""The first search of a fresh process: run as ``python -m agent_memory.bench._cold URL FOLDER USER QUERY MODE WARM``.

Opens the composition root on the database (with the given snapshot folder), optionally loads the
tokenizer first (``WARM`` = 1, as a server does at start), runs one search and prints one JSON object
with the phases in milliseconds. The parent (:func:`agent_memory.bench._latency.cold_first_search`)
times the whole process from spawn to exit.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

_STARTED = time.perf_counter()


async def _main(url: str, folder: str, user: str, query: str, mode: str, warm: bool) -> dict[str, object]:
    from ..search import is_search_mode
    from ._system import bench_settings, bench_system

    imported = time.perf_counter()
    system = bench_system(url, bench_settings(url, memory_search_index_snapshot_dir=folder))
    async with system:
        opened = time.perf_counter()
        if warm:
            await system.search.warm_up()
        warmed = time.perf_counter()
        if not is_search_mode(mode):
            raise ValueError(f"unknown search mode {mode!r}")
        hits = await system.search.search(query, user_id=user, mode=mode, limit=10)
        done = time.perf_counter()
        state = system.search._users.get(user)
        loaded = state is not None and state.snapshot_revision >= 0 and state.applied_since_snapshot == 0
    return {
        "import_ms": round((imported - _STARTED) * 1000, 1),
        "open_ms": round((opened - imported) * 1000, 1),
        "warm_up_ms": round((warmed - opened) * 1000, 1),
        "search_ms": round((done - warmed) * 1000, 1),
        "hits": len(hits),
        "from_snapshot": loaded,
    }


if __name__ == "__main__":
    url, folder, user, query, mode, warm = sys.argv[1:7]
    print(json.dumps(asyncio.run(_main(url, folder, user, query, mode, warm == "1"))))
