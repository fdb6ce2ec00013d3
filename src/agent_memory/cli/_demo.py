"""``agent-memory demo``: the README's main job, offline on an embedded SQLite file."""

from __future__ import annotations

from pathlib import Path

import typer
from platformdirs import user_data_dir
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from data_layer import AgentFusionDataLayer, upgrade
from data_layer._types import utcnow

from ..demo import DEMO_USER, FRIEND_NAMES, sample
from ..search import search_from_settings
from ..settings import get_settings
from ._common import console, fmt_time, run, short
from ._recall import stream_recall

#: (friend, query): the same words find different memories for different friends.
DEMO_SEARCHES = (
    ("mentor", "汇报压力"),
    ("xiaozhu", "汇报压力"),
    ("mentor", "MySQL 数据库配置"),
    ("xiaozhu", "MySQL 数据库配置"),
    ("xiaozhu", "half marathon training"),
    ("xiaozhu", "推荐一部电影"),
)

DEMO_RECALL_QUESTION = "汇报越来越近了，我还是很焦虑，该怎么准备？"

DEFAULT_DEMO_DB = Path(user_data_dir("agent-fusion-memory")) / "demo.db"


def _remove_sqlite_files(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


@run
async def demo_cmd(
    db: Path = typer.Option(DEFAULT_DEMO_DB, "--db", help="SQLite file for the demo (re-created on every run)"),
) -> None:
    """Create a SQLite database, migrate it, load a sample user with two AI friends and show what is stored."""
    _remove_sqlite_files(db)
    url = f"sqlite+aiosqlite:///{db}"
    console.rule("[bold]agent-fusion-memory demo (offline, SQLite)")
    revision = await upgrade(url)
    console.print(f"1. created and migrated [cyan]{db}[/] to revision [bold]{revision}[/]")
    data = sample(utcnow())
    async with AgentFusionDataLayer(url, default_settings=get_settings().user_defaults()) as layer:
        engine = search_from_settings(layer.memory)  # keywords and search terms are stored on write
        await layer.memory.add_many(user_id=DEMO_USER, memories=data.memories)
        await layer.messages.append_many(user_id=DEMO_USER, messages=data.messages)
        console.print(
            f"2. loaded {len(data.memories)} memories and {len(data.messages)} messages for user "
            f"[bold]{DEMO_USER}[/] and two AI friends: "
            + ", ".join(f"{fid} ({name})" for fid, name in FRIEND_NAMES.items())
        )
        for friend_id, name in FRIEND_NAMES.items():
            page = await layer.memory.list_memories(user_id=DEMO_USER, friend_id=friend_id, limit=50)
            table = Table(title=f"what {friend_id} ({name}) can see")
            table.add_column("key", no_wrap=True, min_width=22)
            for column in ("type", "scope", "created", "summary"):
                table.add_column(column)
            for r in page.items:
                scope = "shared" if r.friend_id is None else f"only {r.friend_id}"
                table.add_row(r.memory_key, r.memory_type, scope, fmt_time(r.created_at), short(r.summary, 48))
            console.print(table)
        for friend_id in FRIEND_NAMES:
            recent = await layer.messages.latest(user_id=DEMO_USER, friend_id=friend_id, limit=4)
            lines = "\n".join(f"[dim]{fmt_time(m.created_at)}[/] {m.role}: {short(m.content, 70)}" for m in recent)
            console.print(Panel(lines, title=f"latest messages with {friend_id}", expand=False))
        settings = await layer.settings.get(user_id=DEMO_USER)
        console.print(f"3. recall settings for {DEMO_USER}: {settings.memory.model_dump()}")
        other = await layer.memory.list_memories(user_id="someone-else", limit=10)
        console.print(f"4. isolation: another user sees {len(other.items)} of these memories")
        console.print("5. hybrid search (keyword + text + time), each friend in its own scope:")
        for friend_id, query in DEMO_SEARCHES:
            hits = await engine.search(query, user_id=DEMO_USER, friend_id=friend_id, limit=3, min_relevance_score=0.1)
            found = ", ".join(f"{h.memory_key} ({h.score:.2f})" for h in hits) or "nothing"
            console.print(f"   {friend_id} searches [bold]{query!r}[/]: {found}")
        console.print(
            "6. recall before a reply: MemRecallAgent (AutoGen AssistantAgent + memory tools, driven by the "
            "offline planner) for a new message to mentor, event by event:"
        )
        context = await stream_recall(
            layer, engine, user_id=DEMO_USER, friend_id="mentor", question=DEMO_RECALL_QUESTION
        )
        block = context.last_block or "(nothing recalled)"
        # Text(): the [memory:...] slots are not rich markup
        console.print(Panel(Text(block), title="what the main model receives first", expand=False))
