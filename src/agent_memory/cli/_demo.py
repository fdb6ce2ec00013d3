"""``agent-memory demo``: the README's main job, offline on an embedded SQLite file."""

from __future__ import annotations

from pathlib import Path

import typer
from platformdirs import user_data_dir
from rich.text import Text

from ._common import console, esc, fmt_time, open_system, run, short

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
    from rich.panel import Panel
    from rich.table import Table

    from data_layer import head_revision, utcnow

    from ..demo import DEMO_USER, FRIEND_NAMES, sample
    from ._recall import stream_recall

    _remove_sqlite_files(db)
    url = f"sqlite+aiosqlite:///{db}"
    console.rule("[bold]agent-fusion-memory demo (offline, SQLite)")
    async with open_system(url, announce_new=False) as system:  # creates and migrates the new file
        layer = system.layer
        console.print(f"1. created and migrated [cyan]{esc(db)}[/] to revision [bold]{esc(head_revision())}[/]")
        data = sample(utcnow())
        await layer.memory.add_many(user_id=DEMO_USER, memories=data.memories)  # keywords and search terms too
        await layer.messages.append_many(user_id=DEMO_USER, messages=data.messages)
        console.print(
            f"2. loaded {len(data.memories)} memories and {len(data.messages)} messages for user "
            f"[bold]{esc(DEMO_USER)}[/] and two AI friends: "
            + esc(", ".join(f"{fid} ({name})" for fid, name in FRIEND_NAMES.items()))
        )
        for friend_id, name in FRIEND_NAMES.items():
            page = await layer.memory.list_memories(user_id=DEMO_USER, friend_id=friend_id, limit=50)
            table = Table(title=Text(f"what {friend_id} ({name}) can see"))
            table.add_column("key", no_wrap=True, min_width=22)
            for column in ("type", "scope", "created", "summary"):
                table.add_column(column)
            for r in page.items:
                scope = "shared" if r.friend_id is None else f"only {r.friend_id}"
                cells = (r.memory_key, r.memory_type, scope, fmt_time(r.created_at), short(r.summary, 48))
                table.add_row(*map(Text, cells))
            console.print(table)
        for friend_id in FRIEND_NAMES:
            recent = await layer.messages.latest(user_id=DEMO_USER, friend_id=friend_id, limit=4)
            lines = "\n".join(
                f"[dim]{fmt_time(m.created_at)}[/] {esc(m.role)}: {esc(short(m.content, 70))}" for m in recent
            )
            console.print(Panel(lines, title=Text(f"latest messages with {friend_id}"), expand=False))
        settings = await layer.settings.get(user_id=DEMO_USER)
        console.print(Text(f"3. recall settings for {DEMO_USER}: {settings.memory.model_dump()}"))
        other = await layer.memory.list_memories(user_id="someone-else", limit=10)
        console.print(f"4. isolation: another user sees {len(other.items)} of these memories")
        console.print("5. hybrid search (keyword + text + time), each friend in its own scope:")
        for friend_id, query in DEMO_SEARCHES:
            hits = await system.search.search(
                query, user_id=DEMO_USER, friend_id=friend_id, limit=3, min_relevance_score=0.1
            )
            found = ", ".join(f"{h.memory_key} ({h.score:.2f})" for h in hits) or "nothing"
            console.print(f"   {esc(friend_id)} searches [bold]{esc(repr(query))}[/]: {esc(found)}")
        console.print(
            "6. recall before a reply: MemRecallAgent (AutoGen AssistantAgent + memory tools, driven by the "
            "offline planner) for a new message to mentor, event by event:"
        )
        context = await stream_recall(system, user_id=DEMO_USER, friend_id="mentor", question=DEMO_RECALL_QUESTION)
        block = context.last_block or "(nothing recalled)"
        # Text(): the [memory:...] slots are not rich markup
        console.print(Panel(Text(block), title="what the main model receives first", expand=False))
