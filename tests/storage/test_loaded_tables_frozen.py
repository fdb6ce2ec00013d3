"""A process the memory system owns leaves the loaded tables out of the garbage collector's full passes
(``freeze_loaded``); the library itself never freezes a host application's process. Checked in a
fresh interpreter each, since freezing is the whole process's."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from data_layer import upgrade

_PROGRAM = """
import asyncio, gc, json, sys
from agent_memory.search import freeze_loaded
from agent_memory.settings import load_settings
from agent_memory.system import MemorySystem

async def main() -> None:
    async with MemorySystem.build(load_settings(memory_database_url=sys.argv[1])) as system:
        await system.layer.memory.add(user_id="u1", memory_key="k", content="我喜欢喝手冲咖啡")
        await system.search.warm_up()
        hosted = gc.get_freeze_count()
        returned = freeze_loaded()
        frozen = gc.get_freeze_count()
        hits = await system.search.search("咖啡", user_id="u1")
    print(json.dumps({"hosted": hosted, "returned": returned, "frozen": frozen, "found": [h.memory_key for h in hits]}))

asyncio.run(main())
"""


async def test_only_the_owner_of_a_process_freezes_what_is_loaded(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'frozen.db'}"
    await upgrade(url)
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", _PROGRAM, url], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["hosted"] == 0  # a warm library in someone else's process freezes nothing
    # the thesaurus, the dictionaries and the word vectors alone are well over 100,000 objects
    assert figures["frozen"] == figures["returned"] > 100_000
    assert figures["found"] == ["k"]  # and it searches as before
