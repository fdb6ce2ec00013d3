"""After a process's first warm-up the loaded tables leave the garbage collector's full passes
(``MEMORY_SEARCH_FREEZE_LOADED``, default on): checked in a fresh interpreter, since a test process
freezes once for every later test."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from data_layer import upgrade

_PROGRAM = """
import asyncio, gc, json, sys
from agent_memory.settings import load_settings
from agent_memory.system import MemorySystem

async def main() -> None:
    before = gc.get_freeze_count()
    async with MemorySystem.build(load_settings(memory_database_url=sys.argv[1])) as system:
        await system.layer.memory.add(user_id="u1", memory_key="k", content="我喜欢喝手冲咖啡")
        await system.search.warm_up()
        after = gc.get_freeze_count()
        hits = await system.search.search("咖啡", user_id="u1")
    print(json.dumps({"before": before, "after": after, "found": [h.memory_key for h in hits]}))

asyncio.run(main())
"""


@pytest.mark.parametrize("setting", ["true", "false"])
async def test_warm_up_freezes_what_is_loaded_unless_told_not_to(tmp_path: Path, setting: str) -> None:
    env = {**os.environ, "MEMORY_SEARCH_FREEZE_LOADED": setting}
    url = f"sqlite+aiosqlite:///{tmp_path / 'frozen.db'}"
    await upgrade(url)
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", _PROGRAM, url],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["before"] == 0
    if setting == "true":
        # the thesaurus, the dictionaries and the word vectors alone are well over 100,000 objects
        assert figures["after"] > 100_000
    else:
        assert figures["after"] == 0
    assert figures["found"] == ["k"]  # searches are the same either way
