"""A user's explicit request to forget: detection in both languages, and the whole loop on both backends
(a real AssistantAgent over MemoryContext with scripted models): told, archived, asked to forget, no longer
recalled nor cited as evidence, undone."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_core.models import AssistantMessage, UserMessage
from typer.testing import CliRunner

from agent_memory.cli import app
from agent_memory.forgetting import forget_request
from agent_memory.recall import MemoryForgottenEvent, RecallMemoryInput
from agent_memory.system import MemorySystem
from data_layer import NewMessage, NotFoundError
from scripted import replay

# -- detection --------------------------------------------------------------------------------------

REQUESTS = [
    ("别再记着我前任的事了", "前任"),
    ("忘了我跟你说过的关于X的事", "X"),
    ("忘了我跟你说过的关于我前任的事吧", "前任"),
    ("forget what I told you about my ex", "my ex"),
    ("please don't remember that I smoke", "smoke"),
    ("删掉关于我前男友的记忆", "前男友"),
    ("麻烦把我抽烟的事都忘掉", "抽烟"),
    ("好的，以后不要再记着我住院的事了", "住院"),
    ("你能忘掉我离婚的事吗？", "离婚"),
    ("Could you please forget about my old job?", "old job"),
    ("Please stop remembering my ex's name.", "ex"),
    ("Forget everything I told you about my divorce.", "divorce"),
    ("delete what you know about my ex", "my ex"),
    ("I want you to forget my ex.", "my ex"),
]

NOT_REQUESTS = [
    "我忘了带钥匙",
    "我经常忘记吃早饭",
    "别忘了提醒我明天开会",
    "don't forget my birthday",
    "I always forget my password",
    "I forgot my keys at home.",
    "你还记得我前任叫什么吗？",
    "你忘了我前任的事吗？",
    "Did you forget what I said about my ex?",
    "Do you remember my ex?",
    "她说忘了他吧",
    "我朋友让我忘了他",
    "He told me to forget about my ex.",
    "如果你忘了我前任的事，我会很开心",
    "我妈说“忘掉你前任吧”",
    "never mind, forget it",
    "忘了吧",
    "删掉这个文件",
    "delete the file please",
]


@pytest.mark.parametrize(("text", "subject"), REQUESTS)
def test_a_request_to_forget_is_heard_with_its_subject(text: str, subject: str) -> None:
    found = forget_request(text)
    assert found is not None, text
    assert subject.lower() in found.subject.lower()
    assert not found.subject.startswith(("关于", "about", "what"))


@pytest.mark.parametrize("text", NOT_REQUESTS)
def test_what_is_not_a_request_to_forget(text: str) -> None:
    assert forget_request(text) is None


# -- the loop -------------------------------------------------------------------------------------------

EX = "我前任叫林小美，我们去年分手了"
FILM = "我喜欢看科幻电影"


def _recalled(messages: list[Any]) -> str:
    """What a model request's recall gave the model (the injected system messages and tool results)."""
    return " ".join(str(m.content) for m in messages if not isinstance(m, UserMessage | AssistantMessage))


def _drain(queue: asyncio.Queue[Any]) -> list[Any]:
    items = []
    while not queue.empty():
        items.append(queue.get_nowait())
    return items


async def _cited(system: MemorySystem, user: str, friend: str, question: str) -> set[int]:
    run = await system.evidence_agent(system.scope(user, friend)).recall(question)
    return {e.message_id for e in run.output.evidence}


async def _found(system: MemorySystem, user: str, friend: str, query: str) -> list[str]:
    hits = await system.search.search(query, user_id=user, friend_id=friend, limit=20)
    return [h.record.content for h in hits]


async def test_forget_in_the_chat_then_undo(system: MemorySystem) -> None:
    earlier = datetime.now(UTC) - timedelta(days=3)
    layer = system.layer
    told = await layer.messages.append_many(
        user_id="u1",
        messages=[
            NewMessage(role="user", content=EX, friend_id="xiaozhu", created_at=earlier),
            NewMessage(role="user", content=FILM, friend_id="xiaozhu", created_at=earlier + timedelta(seconds=5)),
        ],
    )
    ex_id = told[0].id
    await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
    # another friend's event and another user's memory about an ex
    await layer.memory.add(
        user_id="u1",
        memory_key="mentor-ex",
        memory_type="event",
        friend_id="mentor",
        content="用户提到前任林小美也在腾讯工作",
    )
    other = await layer.messages.append(user_id="u2", role="user", content=EX, friend_id="xiaozhu")
    await layer.memory.add(
        user_id="u2", memory_key="u2-ex", memory_type="event", friend_id="xiaozhu", content="用户的前任叫林小美"
    )
    assert any("林小美" in c for c in await _found(system, "u1", "xiaozhu", "前任林小美"))
    assert ex_id in await _cited(system, "u1", "xiaozhu", "我前任叫什么名字？")

    queue: asyncio.Queue[Any] = asyncio.Queue()
    client = replay(["记得，你说过她。", "好的，我不会再提起了。", "你叫我别提的那件事，我已经不记得了。"])
    agent = AssistantAgent(
        "main", model_client=client, model_context=system.context(user_id="u1", friend_id="xiaozhu", events=queue)
    )
    await agent.run(task="你还记得我前任林小美吗？")
    assert "林小美" in _recalled(client.create_calls[-1]["messages"])  # what the next turn must no longer see
    await agent.run(task="别再记着我前任的事了")
    events = [e for e in _drain(queue) if isinstance(e, MemoryForgottenEvent)]
    assert len(events) == 1 and "前任" in events[0].subject
    assert ex_id in events[0].message_ids and events[0].memory_keys
    request_id = (await layer.messages.latest(user_id="u1", friend_id="xiaozhu", limit=2))[0].id

    # the very next turn's recall, a search, recall_memory and evidence recall no longer hold it
    await agent.run(task="你还记得我前任林小美吗？")
    assert "林小美" not in _recalled(client.create_calls[-1]["messages"])
    assert not any("林小美" in c for c in await _found(system, "u1", "xiaozhu", "前任林小美"))
    out = await system.recall_memory(user_id="u1", request=RecallMemoryInput(query="我前任叫什么", friend_id="xiaozhu"))
    assert "林小美" not in out.model_dump_json()
    cited = await _cited(system, "u1", "xiaozhu", "我前任叫什么名字？")
    assert ex_id not in cited and request_id not in cited
    # what was not about it stays; another friend's events and another user's memories are untouched
    assert any("科幻" in c for c in await _found(system, "u1", "xiaozhu", "科幻电影"))
    assert (await layer.memory.retrieve_memory(memory_key="mentor-ex", user_id="u1", touch=False)) is not None
    assert (await layer.memory.retrieve_memory(memory_key="u2-ex", user_id="u2", touch=False)) is not None
    assert other.id in await _cited(system, "u2", "xiaozhu", "我前任叫什么名字？")

    # archiving the session later does not make the request (or the forgotten messages) a memory
    await system.session_archiver.drain()
    await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
    page = await layer.memory.list_memories(user_id="u1", limit=200)
    sources = {i for r in page.items for i in r.metadata.get("source_message_ids") or []}
    assert request_id not in sources and ex_id not in sources

    listed = await system.forgettings("u1")
    assert [f.key for f in listed] == [events[0].forgetting_key] and listed[0].undone_at is None

    undone = await system.unforget("u1")
    assert undone.key == events[0].forgetting_key and undone.undone_at is not None
    assert any("林小美" in c for c in await _found(system, "u1", "xiaozhu", "前任林小美"))
    assert ex_id in await _cited(system, "u1", "xiaozhu", "我前任叫什么名字？")
    with pytest.raises(NotFoundError):
        await system.unforget("u1")  # nothing left to undo


async def test_forget_in_english_keeps_other_friends_events(system: MemorySystem) -> None:
    layer = system.layer
    await layer.memory.add(user_id="u1", memory_key="smoke", memory_type="profile", content="I smoke a pack a day")
    await layer.memory.add(user_id="u1", memory_key="run", memory_type="profile", content="I run every morning")
    await layer.memory.add(
        user_id="u1",
        memory_key="mentor-smoke",
        memory_type="event",
        friend_id="mentor",
        content="User said smoking helps with stress at work",
    )
    done = await system.forget(system.scope("u1", "buddy"), "I smoke")
    assert "smoke" in done.memory_keys and "run" not in done.memory_keys
    assert "mentor-smoke" not in done.memory_keys  # another friend's event: not in this friend's scope
    assert (await layer.memory.retrieve_memory(memory_key="smoke", user_id="u1", touch=False)) is None
    hits = await system.search.search("smoke", user_id="u1", friend_id="mentor", limit=10)
    keys = [h.memory_key for h in hits]
    assert "mentor-smoke" in keys and "smoke" not in keys  # the shared profile item is gone for every friend
    await system.unforget("u1", key=done.key)
    restored = await layer.memory.retrieve_memory(memory_key="smoke", user_id="u1", touch=False)
    assert restored is not None and "forgotten" not in restored.metadata


def test_cli_forget_forgotten_unforget(tmp_path: Any) -> None:
    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    added = runner.invoke(
        app, ["memory", "add", "ex", "我前任叫林小美", "--user", "u1", "--type", "profile", "--db", db]
    )
    assert added.exit_code == 0, added.output
    forgot = runner.invoke(app, ["memory", "forget", "前任", "--user", "u1", "--db", db, "--json"])
    assert forgot.exit_code == 0, forgot.output
    assert '"ex"' in forgot.stdout
    listed = runner.invoke(app, ["memory", "forgotten", "--user", "u1", "--db", db])
    assert listed.exit_code == 0 and "前任" in listed.stdout
    listing = json.loads(runner.invoke(app, ["memory", "list", "--user", "u1", "--db", db, "--json"]).stdout)
    assert "林小美" not in json.dumps(listing, ensure_ascii=False)
    undone = runner.invoke(app, ["memory", "unforget", "--user", "u1", "--db", db])
    assert undone.exit_code == 0, undone.output
    got = runner.invoke(app, ["memory", "get", "ex", "--user", "u1", "--db", db])
    assert got.exit_code == 0 and "林小美" in got.stdout
    again = runner.invoke(app, ["memory", "unforget", "--user", "u1", "--db", db])
    assert again.exit_code == 2 and "nothing forgotten to undo" in again.output


async def test_an_export_carries_what_was_forgotten_with_the_new_message_ids(system: MemorySystem) -> None:
    import io

    from agent_memory.transfer import export_user, import_user

    layer = system.layer
    await layer.messages.append(user_id="u1", role="user", content="今天天气不错", friend_id="xiaozhu")
    told = await layer.messages.append(user_id="u1", role="user", content=EX, friend_id="xiaozhu")
    done = await system.forget(system.scope("u1", "xiaozhu"), "前任")
    assert told.id in done.message_ids
    out = io.StringIO()
    await export_user(layer, user_id="u1", out=out)
    await import_user(layer, lines=io.StringIO(out.getvalue()).readlines(), user_id="u9")
    [moved] = await system.forgettings("u9")
    ex_now = [m.id for m in await layer.messages.latest(user_id="u9", friend_id="xiaozhu", limit=5) if m.content == EX]
    assert moved.subject == "前任" and list(moved.message_ids) == ex_now
    assert ex_now[0] not in await _cited(system, "u9", "xiaozhu", "我前任叫什么名字？")


@pytest.mark.parametrize("subject", ["所有", "一切", "everything", "  It  ", "这些"])
async def test_a_subject_that_names_nothing_is_refused_and_nothing_is_recorded(
    system: MemorySystem, subject: str
) -> None:
    from data_layer import InvalidInputError

    await system.layer.memory.add(user_id="u1", memory_key="ex", memory_type="profile", content=EX)
    with pytest.raises(InvalidInputError, match=r"names no thing to forget.*user delete"):
        await system.forget(system.scope("u1", "xiaozhu"), subject)
    assert await system.forgettings("u1") == []
    assert await system.layer.memory.retrieve_memory(memory_key="ex", user_id="u1", touch=False) is not None


@pytest.mark.parametrize("subject", ["前任\x00", "前\x07任", "\x1b[31m前任"])
async def test_a_subject_with_a_control_character_is_refused_in_plain_words(system: MemorySystem, subject: str) -> None:
    from data_layer import InvalidInputError

    await system.layer.memory.add(user_id="u1", memory_key="ex", memory_type="profile", content=EX)
    with pytest.raises(InvalidInputError, match=r"^subject holds a control character; give the thing to forget"):
        await system.forget(system.scope("u1", "xiaozhu"), subject)
    assert await system.forgettings("u1") == []


def test_a_request_in_the_chat_drops_control_characters_from_its_subject() -> None:
    found = forget_request("忘掉关于前\x07任的事")
    assert found is not None and found.subject == "前任"


# -- a subject that matches most memories ------------------------------------------------------------

BROAD_EVENTS = [
    "用户说周末去爬了香山",
    "用户提到最近在学吉他",
    "用户说下周要去上海出差",
    "用户抱怨公司食堂太难吃",
    "用户养了一只叫团子的猫",
    "用户说前任叫林小美",
]


async def _broad_memories(system: MemorySystem) -> list[str]:
    from data_layer import NewMemory

    items = [
        NewMemory(memory_key=f"e{i}", memory_type="event", friend_id="xiaozhu", content=text)
        for i, text in enumerate(BROAD_EVENTS)
    ]
    items.append(NewMemory(memory_key="p-job", memory_type="profile", content="职业: 程序员"))
    await system.layer.memory.add_many(user_id="u1", memories=items)
    return [m.memory_key for m in items]


async def test_a_subject_matching_most_memories_is_refused_unless_broad(system: MemorySystem) -> None:
    from agent_memory.forgetting import BroadSubjectError

    keys = await _broad_memories(system)
    with pytest.raises(BroadSubjectError, match=r"^subject '用户' matches \d+ of the 7 active memories.*broad=True"):
        await system.forget(system.scope("u1", "xiaozhu"), "用户")
    assert await system.forgettings("u1") == []
    assert set(await system.layer.memory.get_many(user_id="u1", memory_keys=keys)) == set(keys)
    # a precise subject in the same memories is no broad one
    done = await system.forget(system.scope("u1", "xiaozhu"), "前任")
    assert done.memory_keys == ("e5",)
    await system.unforget("u1")
    done = await system.forget(system.scope("u1", "xiaozhu"), "用户", broad=True)
    assert len(done.memory_keys) >= 5 and "p-job" not in done.memory_keys


async def test_a_broad_request_in_the_chat_forgets_nothing_and_says_so(system: MemorySystem) -> None:
    from agent_memory.recall import MemoryNotForgottenEvent

    keys = await _broad_memories(system)
    queue: asyncio.Queue[Any] = asyncio.Queue()
    client = replay(["好的。"])
    agent = AssistantAgent(
        "main", model_client=client, model_context=system.context(user_id="u1", friend_id="xiaozhu", events=queue)
    )
    await agent.run(task="忘掉关于用户的事")
    events = _drain(queue)
    assert not [e for e in events if isinstance(e, MemoryForgottenEvent)]
    [notice] = [e for e in events if isinstance(e, MemoryNotForgottenEvent)]
    assert notice.subject == "用户" and notice.matches >= 5 and notice.total == 7 and "没有忘记" in notice.content
    assert await system.forgettings("u1") == []
    assert set(await system.layer.memory.get_many(user_id="u1", memory_keys=keys)) == set(keys)


def test_cli_forget_refuses_a_broad_subject_unless_all_matching(tmp_path: Any) -> None:
    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    for i, text in enumerate(BROAD_EVENTS):
        added = runner.invoke(app, ["memory", "add", f"e{i}", text, "--user", "u1", "--db", db])
        assert added.exit_code == 0, added.output
    refused = runner.invoke(app, ["memory", "forget", "用户", "--user", "u1", "--db", db])
    assert refused.exit_code == 2 and "--all-matching" in refused.output, refused.output
    done = runner.invoke(app, ["memory", "forget", "用户", "--user", "u1", "--db", db, "--all-matching", "--json"])
    assert done.exit_code == 0, done.output
    assert len(json.loads(done.stdout)["memories"]) >= 5


# -- forgetting while the archiver writes --------------------------------------------------------------


async def test_a_forgetting_waits_for_an_archiving_run_that_checked_before_it(db_url: str) -> None:
    """The archiver pauses after it checked what is set aside and before it writes; the forgetting comes
    in between. It must wait for the run (then find the memories formed of the messages it forgets), not
    search past it."""
    from contextlib import asynccontextmanager

    from agent_memory.settings import load_settings
    from data_layer import ChatLocks

    wanted = asyncio.Event()  # the forgetting asked for the archive lock of the chat

    class Observed(ChatLocks):
        @asynccontextmanager
        async def hold(self, kind: str, *key: str | None) -> Any:
            if kind == "archive" and checked.is_set():
                wanted.set()
            async with super().hold(kind, *key):
                yield

    checked, searched = asyncio.Event(), asyncio.Event()
    async with MemorySystem.from_settings(load_settings(memory_database_url=db_url), locks=Observed()) as system:
        system.background_archiving = False
        told = await system.layer.messages.append(
            user_id="u1", role="user", content=EX, friend_id="xiaozhu", created_at=datetime.now(UTC) - timedelta(days=1)
        )
        check = system.session_archiver.set_aside
        assert check is not None

        async def paused(user_id: str, messages: Any) -> frozenset[int]:
            aside = await check(user_id, messages)
            checked.set()
            # go on once the forgetting searched (it did not wait) or waits for this run's lock
            waits = [asyncio.ensure_future(e.wait()) for e in (searched, wanted)]
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for w in waits:
                w.cancel()
            return aside

        system.session_archiver.set_aside = paused
        lexical = system.messages_index.lexical

        async def lexical_seen(*args: Any, **kwargs: Any) -> Any:
            found = await lexical(*args, **kwargs)
            searched.set()
            return found

        system.messages_index.lexical = lexical_seen
        run = asyncio.create_task(system.session_archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True))
        await checked.wait()
        done = await system.forget(system.scope("u1", "xiaozhu"), "前任")
        report = await run
        assert report.memory_keys, "the run wrote memories of the message"
        page = await system.layer.memory.list_memories(user_id="u1", limit=100)
        citing = [r.memory_key for r in page.items if told.id in (r.metadata.get("source_message_ids") or [])]
        assert citing == [], f"memories of a forgotten message stayed active: {citing}"
        assert told.id in done.message_ids and set(report.memory_keys) & set(done.memory_keys)
