"""Crash consistency: a writer process killed with SIGKILL inside a transaction leaves a consistent store.

A child process writes memories in batches (``add_many``) and replaces earlier ones (``upsert``); it
prints ``TX`` as soon as a memory row is inserted (the transaction is open) and ``ACK ...`` after each
commit. The parent kills it with ``kill -9`` at a random ``TX``, then checks on the database:

- every memory row has its keywords and its search-index row (or is marked ``needs_keyword_extraction``);
- no keyword or search-index row is left without its memory;
- each user's revision counter is at least the highest revision stamped on their rows;
- every acknowledged write is stored (upserts: at least the acknowledged version), and a fresh
  ``MemorySystem`` search finds acknowledged memories.

The child then runs again on the same database (recovery after the crash), ``KILLS`` times per backend.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, exists, func, select
from sqlalchemy.engine import make_url

from data_layer._tables import (
    AgentMemoryKeywordsTable,
    AgentMemorySearchIndexTable,
    AgentMemoryTable,
    MemoryIndexStateTable,
)

KILLS = int(os.environ.get("AFM_RELIABILITY_KILLS", "5"))
USER = "crash-user"
BATCH = 40

CHILD = r"""
import asyncio, sys
from sqlalchemy import event

async def main(url, run):
    from agent_memory.settings import load_settings
    from agent_memory.system import MemorySystem
    from data_layer import NewMemory

    async with MemorySystem.from_settings(load_settings(memory_database_url=url)) as system:
        @event.listens_for(system.layer.db.engine.sync_engine, "after_cursor_execute")
        def mid_transaction(conn, cursor, statement, params, context, executemany):
            if statement.lstrip().upper().startswith(("INSERT INTO AGENT_MEMORIES", "UPDATE AGENT_MEMORIES SET")):
                sys.stdout.write("TX\n")
                sys.stdout.flush()

        batch = 0
        while True:
            keys = [f"r{run}b{batch}n{i}" for i in range(BATCH)]
            memories = [
                NewMemory(memory_key=k, content=f"crash memory {k} 用户喜欢咖啡和旅行 topic{batch % 7}",
                          memory_type="event", friend_id="f0")
                for k in keys
            ]
            await system.layer.memory.add_many(user_id=USER, memories=memories)
            print("ACK " + " ".join(keys), flush=True)
            target = f"r{run}b{batch // 2}n0"
            await system.layer.memory.upsert(user_id=USER, memory_key=target, memory_type="event", friend_id="f0",
                                             content=f"crash memory {target} replaced ver{batch} 数据库 postgres")
            print(f"UPS {target} {batch}", flush=True)
            batch += 1

USER, BATCH = sys.argv[3], int(sys.argv[4])
asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def _sync_url(url: str) -> str:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        parsed = parsed.set(drivername="sqlite")
    return parsed.render_as_string(hide_password=False)


def _run_and_kill(url: str, run: int, rng: random.Random, tmp: Path) -> tuple[set[str], dict[str, int]]:
    """Start the child, SIGKILL it at a random open transaction; the keys and upsert versions it acknowledged."""
    errors = tmp / f"child-{run}.err"
    with errors.open("wb") as err:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, url, str(run), USER, str(BATCH)],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    acked: set[str] = set()
    upserted: dict[str, int] = {}
    kill_at = rng.randint(1, 12)
    seen_tx = 0
    assert child.stdout is not None
    deadline = time.monotonic() + 60

    def take(line: str) -> None:
        if line.startswith("ACK "):
            acked.update(line.split()[1:])
        elif line.startswith("UPS "):
            _, key, version = line.split()
            upserted[key] = max(upserted.get(key, -1), int(version))

    try:
        while True:
            line = child.stdout.readline()
            if not line:
                raise AssertionError(f"the writer ended before it was killed: {errors.read_text()[-2000:]}")
            take(line)
            if line.startswith("TX"):
                seen_tx += 1
                if seen_tx >= kill_at:
                    time.sleep(rng.uniform(0, 0.005))
                    os.kill(child.pid, signal.SIGKILL)
                    break
            assert time.monotonic() < deadline, "the writer did not reach its transactions in time"
        for line in child.stdout:  # lines flushed before the kill: acknowledged too
            take(line)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=30)
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL, child.returncode
    return acked, upserted


def _check_store(url: str, acked: set[str], upserted: dict[str, int]) -> int:
    """The consistency checks on the database; returns the rows stored."""
    m, kw, ix, state = AgentMemoryTable, AgentMemoryKeywordsTable, AgentMemorySearchIndexTable, MemoryIndexStateTable
    engine = create_engine(_sync_url(url))
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(m.memory_key, m.is_active, m.content)).all()
            missing = conn.execute(
                select(m.memory_key).where(
                    m.needs_keyword_extraction.is_(False),
                    ~exists().where(kw.memory_id == m.id) | ~exists().where(ix.memory_id == m.id),
                )
            ).all()
            assert not missing, f"memories without keywords or index row: {missing[:5]}"
            orphan_kw = conn.scalar(select(func.count()).select_from(kw).where(~exists().where(m.id == kw.memory_id)))
            orphan_ix = conn.scalar(select(func.count()).select_from(ix).where(~exists().where(m.id == ix.memory_id)))
            assert orphan_kw == 0 and orphan_ix == 0, (orphan_kw, orphan_ix)
            highest = dict(conn.execute(select(m.user_id, func.max(m.revision)).group_by(m.user_id)).all())
            counters = dict(conn.execute(select(state.user_id, state.revision)).all())
            for user, revision in highest.items():
                assert counters.get(user, -1) >= revision, f"{user}: counter {counters.get(user)} < row {revision}"
    finally:
        engine.dispose()
    stored = {key: (active, content) for key, active, content in rows}
    lost = sorted(k for k in acked if k not in stored or not stored[k][0])
    assert not lost, f"{len(lost)} acknowledged memories lost: {lost[:5]}"
    for key, version in upserted.items():
        content = stored[key][1]
        stored_version = int(content.split(" ver")[1].split()[0]) if " ver" in content else -1
        assert stored_version >= version, f"{key}: acknowledged ver{version}, stored {content!r}"
    return len(rows)


async def _search_finds(url: str, keys: list[str]) -> list[str]:
    """The keys a fresh system's search does not find (searched by key, as friend f0)."""
    from agent_memory.settings import load_settings
    from agent_memory.system import MemorySystem

    missed = []
    async with MemorySystem.from_settings(load_settings(memory_database_url=url)) as system:
        assert await system.layer.memory.count(user_id=USER) >= len(keys)
        for key in keys:
            hits = await system.search.search(key, user_id=USER, friend_id="f0", limit=20)
            if key not in {h.record.memory_key for h in hits}:
                missed.append(key)
    return missed


@pytest.mark.slow
def test_sigkill_inside_transactions_leaves_a_consistent_store(db_url: str, backend: str, tmp_path: Path) -> None:
    rng = random.Random(f"crash-{backend}-{os.environ.get('AFM_RELIABILITY_SEED', '0')}")
    acked: set[str] = set()
    upserted: dict[str, int] = {}
    started = time.perf_counter()
    stored = 0
    for run in range(KILLS):
        run_acked, run_upserted = _run_and_kill(db_url, run, rng, tmp_path)
        acked |= run_acked
        for key, version in run_upserted.items():
            upserted[key] = max(upserted.get(key, -1), version)
        stored = _check_store(db_url, acked, upserted)
        sample = rng.sample(sorted(run_acked), min(10, len(run_acked)))
        missed = asyncio.run(_search_finds(db_url, sample))
        assert not missed, f"search misses acknowledged memories after the crash: {missed}"
    print(
        f"\n[reliability crash {backend}] kills={KILLS} acknowledged={len(acked)} stored_rows={stored} "
        f"seconds={time.perf_counter() - started:.1f}"
    )
    assert acked, "no write was acknowledged before the kills"
