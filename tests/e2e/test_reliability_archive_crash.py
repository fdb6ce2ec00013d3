"""Crash-safe archiving whatever the timestamps: the archiver killed with SIGKILL at random points forms the
same memories as a run that was never interrupted.

A chat is imported with its messages' ``created_at`` shuffled against their ids (sessions are cut by
time, so what one session holds is no range of ids). The same messages go into two databases: a
control, archived in one uninterrupted run, and the crashed one, where a child process runs the
archiver and is killed (``kill -9``) at a random write (it prints ``TX`` after each INSERT, UPDATE or
DELETE, inside the transaction), ``AFM_ARCHIVE_CRASH_KILLS`` times, then runs to the end. The memories
(key, type, active, content, metadata) must equal the control's, every message must be archived, and
one more run must find nothing left to do. ``make reliability`` runs it with more kills and messages.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select
from sqlalchemy.engine import make_url

from conftest import create_pg_database, drop_pg_database
from data_layer import upgrade
from data_layer._tables import AgentMemoryTable, ChatMessageTable

KILLS = int(os.environ.get("AFM_ARCHIVE_CRASH_KILLS", "4"))
MESSAGES = int(os.environ.get("AFM_ARCHIVE_CRASH_MESSAGES", "120"))
USER = "crash-archive-user"
FRIENDS = ("mentor", "buddy")
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)

#: What the user says: changes of state across sessions (profile items superseded), likes, plain chat.
SAID = (
    "我住在杭州，离西湖很近",
    "我搬到深圳了，新家还没收拾好",
    "I live in London with my partner.",
    "We finally moved! I live in Berlin now.",
    "我在腾讯工作，做后台开发",
    "我换工作了，现在在字节跳动上班",
    "我喜欢看科幻电影",
    "我现在不喜欢恐怖片了",
    "I quit my job last week.",
    "I got married in June!",
    "我最近在准备马拉松，每天跑十公里",
    "周末去爬了黄山，风景很好",
    "我不吃辣",
    "我又开始吃辣了",
    "My sister moved to Boston last year.",
    "要是搬到上海，房租肯定翻倍",
    "今天加班到很晚，有点累",
    "I usually wake up at 9am.",
    "New job, so I get up at 6 now.",
    "我戒了咖啡，改喝茶",
)
REPLIES = ("好的，记住了", "听起来不错！", "Got it, thanks for telling me.", "辛苦了，早点休息", "That's great news.")

CHILD = r"""
import asyncio, sys
from sqlalchemy import event

async def main(url, user):
    from agent_memory.settings import load_settings
    from agent_memory.system import MemorySystem

    settings = load_settings(memory_database_url=url, memory_search_embedder="hashing")
    async with MemorySystem.from_settings(settings) as system:
        @event.listens_for(system.layer.db.engine.sync_engine, "after_cursor_execute")
        def written(conn, cursor, statement, params, context, executemany):
            if statement.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")):
                sys.stdout.write("TX\n")
                sys.stdout.flush()

        print("READY", flush=True)
        report = await system.session_archiver.run(user_id=user, all_friends=True, end_open=True)
        print(f"DONE {report.sessions}", flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def _chat(rng: random.Random, count: int) -> list[tuple[str, str, str, datetime]]:
    """``count`` messages (friend, role, text, created_at) in time order: turns minutes apart, sessions
    hours or days apart."""
    out, at = [], dict.fromkeys(FRIENDS, T0)
    for n in range(count):
        friend = rng.choice(FRIENDS)
        gap = timedelta(hours=rng.choice((2, 5, 30))) if rng.random() < 0.2 else timedelta(minutes=rng.randint(1, 9))
        at[friend] += gap
        role = "user" if n % 2 == 0 else "assistant"
        text = rng.choice(SAID) if role == "user" else rng.choice(REPLIES)
        out.append((friend, role, f"{text}", at[friend]))
    return out


async def _import(url: str, chat: list[tuple[str, str, str, datetime]]) -> None:
    """The messages in the (shuffled) order given: ids follow this order, times do not."""
    from data_layer import AgentFusionDataLayer, NewMessage

    async with AgentFusionDataLayer(url) as layer:
        messages = [NewMessage(role=r, content=t, friend_id=f, created_at=at) for f, r, t, at in chat]
        await layer.messages.append_many(user_id=USER, messages=messages)


async def _archive_uninterrupted(url: str) -> int:
    from agent_memory.settings import load_settings
    from agent_memory.system import MemorySystem

    settings = load_settings(memory_database_url=url, memory_search_embedder="hashing")
    async with MemorySystem.from_settings(settings) as system:
        report = await system.session_archiver.run(user_id=USER, all_friends=True, end_open=True)
    return report.sessions


def _sync_url(url: str) -> str:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        parsed = parsed.set(drivername="sqlite")
    return parsed.render_as_string(hide_password=False)


def _memories(url: str) -> tuple[dict[str, Any], int]:
    """The user's memories by key (type, active, content, metadata) and how many messages are unarchived."""
    m, c = AgentMemoryTable, ChatMessageTable
    engine = create_engine(_sync_url(url))
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                select(m.memory_key, m.memory_type, m.is_active, m.content, m.content_metadata, m.friend_id).where(
                    m.user_id == USER
                )
            ).all()
            unarchived = conn.scalar(
                select(func.count()).select_from(c).where(c.user_id == USER, c.archived_at.is_(None))
            )
    finally:
        engine.dispose()
    found = {
        key: (kind, bool(active), content, json.dumps(meta, sort_keys=True, ensure_ascii=False), friend)
        for key, kind, active, content, meta, friend in rows
    }
    return found, int(unarchived or 0)


def _run_child(url: str, kill_at: int | None, rng: random.Random, errors: Path) -> bool:
    """Run the archiver in a child; SIGKILL it at its ``kill_at``-th write. True when it was killed."""
    with errors.open("ab") as err:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, url, USER], stdout=subprocess.PIPE, stderr=err, text=True
        )
    assert child.stdout is not None
    seen, killed = 0, False
    try:
        for line in child.stdout:
            if line.startswith("TX") and kill_at is not None:
                seen += 1
                if seen >= kill_at:
                    time.sleep(rng.uniform(0, 0.003))
                    os.kill(child.pid, signal.SIGKILL)
                    killed = True
                    break
    finally:
        child.wait(timeout=120)
        child.stdout.close()
    if killed:
        assert child.returncode == -signal.SIGKILL, child.returncode
    else:
        assert child.returncode == 0, errors.read_text()[-2000:]
    return killed


@pytest.fixture
def control_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A second migrated, empty database of the test's backend (the uninterrupted control)."""
    if backend == "sqlite":
        path = tmp_path / "control.db"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite+aiosqlite:///{path}"
        return
    admin = request.getfixturevalue("pg_admin_url")
    url = create_pg_database(admin)
    try:
        asyncio.run(upgrade(url))
        yield url
    finally:
        drop_pg_database(admin, url)


@pytest.mark.slow
def test_archiver_killed_at_random_points_forms_the_memories_of_an_uninterrupted_run(
    db_url: str, control_url: str, backend: str, tmp_path: Path
) -> None:
    rng = random.Random(f"archive-crash-{backend}-{os.environ.get('AFM_RELIABILITY_SEED', '0')}")
    chat = _chat(rng, MESSAGES)
    rng.shuffle(chat)  # ids in this order, created_at in another
    assert [at for *_, at in chat] != sorted(at for *_, at in chat)
    started = time.perf_counter()
    asyncio.run(_import(control_url, chat))
    asyncio.run(_import(db_url, chat))
    sessions = asyncio.run(_archive_uninterrupted(control_url))
    control, left = _memories(control_url)
    assert left == 0 and sessions > 3 and control

    # the writes of a whole run, to spread the kills over it
    writes = 1 + 12 * sessions
    kills = 0
    for _ in range(KILLS):
        kills += _run_child(db_url, rng.randint(1, max(1, writes // KILLS)), rng, tmp_path / "child.err")
    assert not _run_child(db_url, None, rng, tmp_path / "child.err")  # the clean re-run
    formed, left = _memories(db_url)
    print(
        f"\n[archive crash {backend}] kills={kills} messages={len(chat)} sessions={sessions} "
        f"memories={len(formed)} control={len(control)} seconds={time.perf_counter() - started:.1f}"
    )
    assert kills >= min(KILLS, 2), "the archiver finished before it could be killed: raise the write estimate"
    assert left == 0, f"{left} messages never archived"
    missing = sorted(set(control) - set(formed))
    extra = sorted(set(formed) - set(control))
    assert not missing and not extra, f"missing {missing[:5]}, extra {extra[:5]}"
    differ = sorted(k for k in control if control[k] != formed[k])
    assert not differ, f"{len(differ)} memories differ from the control's, e.g. {differ[0]}: {formed[differ[0]]}"
    assert asyncio.run(_archive_uninterrupted(db_url)) == 0  # nothing left to do
