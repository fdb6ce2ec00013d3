"""``agent-memory mcp``: the real command, driven by AutoGen's McpWorkbench over stdio and HTTP.

Every test starts the installed ``agent-memory`` script as a subprocess on a real database (SQLite
file, and PostgreSQL for the core calls) loaded with the demo sample, so the schemas, results and
errors are what an MCP client sees.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import ToolCallExecutionEvent
from autogen_ext.tools.mcp import McpWorkbench, StdioServerParams, StreamableHttpServerParams

from agent_memory.demo import DEMO_USER, FRIEND_HELPER, FRIEND_MENTOR, sample
from agent_memory.settings import load_settings
from agent_memory.system import MemorySystem
from data_layer import NewMemory
from data_layer._types import utcnow
from scripted import call, replay

#: slow: an MCP server process each
pytestmark = pytest.mark.slow

AGENT_MEMORY = str(Path(sys.executable).with_name("agent-memory"))
TOOL_NAMES = {
    "recall_memory",
    "search_memories",
    "get_memory_detail",
    "add_memory",
    "update_memory",
    "delete_memory",
    "memory_history",
    "list_memories",
    "forget_memories",
    "list_forgotten",
    "unforget",
    "messages_list",
    "lexical_search",
    "semantic_search",
    "neighbors",
}
OTHER_USER = "bob"


def _env(**extra: str) -> dict[str, str]:
    """The server's environment: ours (the MCP client passes only a few variables by default)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_SERVER_")}
    return {**env, **extra}


async def _load(url: str) -> None:
    """The demo sample for DEMO_USER, and one memory of another user."""
    async with MemorySystem.from_settings(load_settings(), database_url=url) as system:
        await system.ensure_schema()
        data = sample(utcnow())
        await system.layer.memory.add_many(user_id=DEMO_USER, memories=data.memories)
        await system.layer.messages.append_many(user_id=DEMO_USER, messages=data.messages)
        await system.layer.memory.add_many(
            user_id=OTHER_USER,
            memories=[NewMemory(memory_key="bob-secret", memory_type="profile", content="Bob's bank PIN is 4321")],
        )


async def _snapshot(url: str) -> dict[str, Any]:
    """Everything the tools could change: each user's memories (key, content, active) and messages."""
    async with MemorySystem.from_settings(load_settings(), database_url=url) as system:
        out: dict[str, Any] = {}
        for user in (DEMO_USER, OTHER_USER):
            page = await system.layer.memory.list_memories(user_id=user, limit=1000, include_inactive=True)
            out[user] = sorted((r.memory_key, r.content, r.summary, r.is_active) for r in page.items)
            msgs = await system.layer.messages.list_range(user_id=user, page_size=1000)
            out[f"{user}/messages"] = [(m.id, m.content) for m in msgs.items]
        return out


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Path:
    """A new SQLite file with the demo sample (the server opens it by path)."""
    path = tmp_path / "memory.db"
    asyncio.run(_load(f"sqlite+aiosqlite:///{path}"))
    return path


def _stdio(db: str | Path, user: str = DEMO_USER) -> McpWorkbench:
    params = StdioServerParams(
        command=AGENT_MEMORY, args=["mcp", "--db", str(db), "--user", user], env=_env(), read_timeout_seconds=60
    )
    return McpWorkbench(params)


async def _call(wb: McpWorkbench, name: str, args: dict[str, Any]) -> Any:
    """A successful call's JSON result (fails the test on a tool error)."""
    result = await wb.call_tool(name, args)
    assert not result.is_error, f"{name}({args}) failed: {result.to_text()}"
    return json.loads(result.to_text())


async def _error(wb: McpWorkbench, name: str, args: dict[str, Any]) -> str:
    """A failed call's message (fails the test when the call succeeds)."""
    result = await wb.call_tool(name, args)
    assert result.is_error, f"{name}({args}) should fail but returned {result.to_text()[:300]}"
    return result.to_text()


def _keys_named(schema: Any) -> set[str]:
    """Every property name anywhere in a JSON schema."""
    found: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                found |= set(value)
            found |= _keys_named(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= _keys_named(value)
    return found


# -- stdio: schemas and every tool ---------------------------------------------------------------------


async def test_tools_are_listed_with_precise_schemas_and_no_user(tmp_path: Path) -> None:
    new_file = tmp_path / "sub" / "new.db"  # a new SQLite path: created and migrated by the command
    async with _stdio(new_file) as wb:
        tools = {t["name"]: t for t in await wb.list_tools()}
        assert set(tools) == TOOL_NAMES
        for name, tool in tools.items():
            params = tool["parameters"]
            assert not {"user", "user_id"} & _keys_named(params), name
            assert params["additionalProperties"] is False, name
            assert "$ref" not in json.dumps(params), name  # nested models inlined: the workbench drops $defs
            assert tool["description"], name
        recall = tools["recall_memory"]["parameters"]
        assert set(recall["required"]) == {"query", "friend_id"}
        assert (
            recall["properties"]["profile_topk"] | {"minimum": 1, "maximum": 10} == recall["properties"]["profile_topk"]
        )
        assert recall["properties"]["similarity_threshold"]["maximum"] == 1.0
        assert tools["list_memories"]["parameters"]["properties"]["limit"]["maximum"] == 100
        add = tools["add_memory"]["parameters"]
        assert add["required"] == ["content"]
        assert "event" in add["properties"]["memory_type"]["enum"]
        lexical = tools["lexical_search"]["parameters"]["properties"]["filter"]
        assert "role" in json.dumps(lexical) and "time_range" in json.dumps(lexical)
        # an empty new database answers, and nothing of another file leaks in
        assert await _call(wb, "list_memories", {}) == {"items": [], "next_cursor": None}
    assert new_file.exists()


async def test_every_tool_answers_over_stdio(db_url: str) -> None:
    """On SQLite and PostgreSQL (the ``db_url`` fixture runs both)."""
    await _load(db_url)
    async with _stdio(db_url) as wb:
        # profiles are shared, events belong to one friend
        movies = await _call(wb, "recall_memory", {"query": "推荐一部科幻电影吧", "friend_id": FRIEND_MENTOR})
        assert set(movies) == {"profiles", "events", "evidence_ids"}
        assert any(p["topic"] == "兴趣" and "科幻" in p["content"] for p in movies["profiles"])
        assert all(set(p) == {"topic", "content", "updated_at"} for p in movies["profiles"])
        sad = {"query": "最近心情低落，晚上睡不好", "friend_id": FRIEND_HELPER}
        helper = await _call(wb, "recall_memory", sad)
        assert any("分手" in e["content"] for e in helper["events"])
        assert all(set(e) == {"date", "content"} for e in helper["events"])
        mentor = await _call(wb, "recall_memory", {**sad, "friend_id": FRIEND_MENTOR})
        assert not any("分手" in e["content"] for e in mentor["events"])  # another friend's event stays private

        # the memory tools
        found = await _call(wb, "search_memories", {"query": "数据库配置"})
        assert found["success"] and "db-config-001" in [r["memory_key"] for r in found["results"]]
        hidden = await _call(wb, "search_memories", {"query": "数据库配置", "friend_id": FRIEND_HELPER})
        assert "db-config-001" not in [r["memory_key"] for r in hidden["results"]]
        detail = await _call(wb, "get_memory_detail", {"memory_key": "db-config-001"})
        assert json.loads(detail["content"])["port"] == 3306
        assert "db-config-001" in await _error(
            wb, "get_memory_detail", {"memory_key": "db-config-001", "friend_id": FRIEND_HELPER}
        )

        # writes and listings
        added = await _call(
            wb,
            "add_memory",
            {
                "content": "用户周五要去上海出差",
                "memory_type": "event",
                "friend_id": FRIEND_MENTOR,
                "memory_key": "trip",
            },
        )
        assert added["created"] is True and added["friend_id"] == FRIEND_MENTOR
        assert "replace=true" in await _error(wb, "add_memory", {"content": "另一件事", "memory_key": "trip"})
        replaced = await _call(
            wb,
            "add_memory",
            {
                "content": "出差改到下周一",
                "memory_type": "event",
                "friend_id": FRIEND_MENTOR,
                "memory_key": "trip",
                "replace": True,
            },
        )
        assert replaced["created"] is False
        assert (await _call(wb, "get_memory_detail", {"memory_key": "trip"}))["content"] == "出差改到下周一"
        auto = await _call(wb, "add_memory", {"content": "Likes green tea", "memory_type": "profile"})
        assert auto["memory_key"].startswith("mcp-") and auto["friend_id"] is None
        # a preview shows a short content whole, and marks a long one as cut
        previews = {
            i["memory_key"]: i["content_preview"] for i in (await _call(wb, "list_memories", {"limit": 100}))["items"]
        }
        assert previews[auto["memory_key"]] == "Likes green tea"
        long = await _call(wb, "add_memory", {"content": "茶" * 300, "memory_type": "profile"})
        listed = await _call(wb, "list_memories", {"limit": 100})
        cut = next(i["content_preview"] for i in listed["items"] if i["memory_key"] == long["memory_key"])
        assert cut == "茶" * 200 + "..."

        events = await _call(wb, "list_memories", {"memory_types": ["event"], "friend_id": FRIEND_MENTOR})
        assert {i["memory_key"] for i in events["items"]} == {"trip", "event-report-pressure", "event-late-nights"}
        first = await _call(wb, "list_memories", {"limit": 4.0})  # a whole number written as a float is an integer
        assert len(first["items"]) == 4 and first["next_cursor"]
        rest = await _call(wb, "list_memories", {"limit": 100, "cursor": first["next_cursor"]})
        keys = [i["memory_key"] for i in first["items"] + rest["items"]]
        # the sample, trip, green tea and the tea leaves, but not what get_memory_detail withholds (a
        # friend's sensitive event)
        withheld = set()
        for memory in sample(utcnow()).memories:
            if (await wb.call_tool("get_memory_detail", {"memory_key": memory.memory_key})).is_error:
                withheld.add(memory.memory_key)
        assert withheld and not withheld & set(keys)
        assert len(keys) == len(set(keys)) == len(sample(utcnow()).memories) + 3 - len(withheld)
        assert "bob-secret" not in keys

        # the evidence tools
        basic = await _call(wb, "messages_list", {"friend_id": FRIEND_MENTOR, "since": "20000101"})  # ISO basic form
        assert len(basic["messages"]) >= 2
        listed = await _call(wb, "messages_list", {"friend_id": FRIEND_MENTOR, "role": "user"})
        assert [m["content"] for m in listed["messages"]] == [
            "最近工作压力好大，下周要做季度汇报。",
            "这几天一直熬夜到两点。",
        ]
        hits = await _call(wb, "lexical_search", {"query_text": '"熬夜"', "filter": {"role": "user"}})
        anchor = hits["messages"][0]
        assert anchor["content"] == "这几天一直熬夜到两点。"
        around = await _call(wb, "neighbors", {"message_id": anchor["message_id"], "before": 1, "after": 1})
        assert around["anchor_id"] == anchor["message_id"] and len(around["messages"]) == 3
        assert str(anchor["message_id"]) in await _error(
            wb, "neighbors", {"message_id": anchor["message_id"], "friend_id": FRIEND_HELPER}
        )
        similar = await _call(
            wb, "semantic_search", {"query_text": "half marathon training", "friend_id": FRIEND_HELPER}
        )
        assert similar["messages"] and "marathon" in similar["messages"][0]["content"]
        assert all(m["friend_id"] == FRIEND_HELPER for m in similar["messages"])


# -- bad input --------------------------------------------------------------------------------------


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("search_memories", {"query": "数据库", "user_id": OTHER_USER}, "bound to user"),
    ("add_memory", {"content": "hi", "user": OTHER_USER}, "bound to user"),
    ("add_memory", {"content": "hi", "colour": "red"}, "unknown argument"),
    ("add_memory", {"content": "x" * 200_000}, "content"),
    ("add_memory", {"content": "汉" * 50_000, "memory_key": "huge"}, "bytes as UTF-8"),
    ("add_memory", {"content": "去医院复查", "memory_type": "event"}, "friend_id"),
    ("add_memory", {"content": "喜欢爬山", "memory_type": "profile", "friend_id": FRIEND_HELPER}, "shared by every"),
    ("add_memory", {"content": "不吃香菜", "memory_type": "user_preference", "friend_id": 1}, "leave friend_id out"),
    ("add_memory", {"content": "x", "memory_key": "a/b"}, "letters, digits"),
    ("add_memory", {"content": "x", "memory_type": "secret"}, "memory_type"),
    ("add_memory", {"content": "   "}, "empty"),
    ("add_memory", {"content": "dup", "memory_key": "profile-job"}, "replace=true"),
    ("get_memory_detail", {"memory_key": "bob-secret"}, "bob-secret"),
    ("get_memory_detail", {"memory_key": "no-such-key"}, "search_memories"),
    ("recall_memory", {"query": "电影"}, "friend_id"),
    ("recall_memory", {"query": "电影", "friend_id": 1, "profile_topk": 11}, "profile_topk"),
    ("recall_memory", {"query": "电影", "friend_id": 1, "similarity_threshold": 1.5}, "similarity_threshold"),
    ("recall_memory", {"query": "", "friend_id": 1}, "query"),
    ("recall_memory", {"query": "电影" * 3000, "friend_id": 1}, "query"),
    ("search_memories", {"query": "x", "memory_types": ["nope"]}, "memory_types"),
    ("search_memories", {"query": "x", "limit": 50}, "limit"),
    ("list_memories", {"limit": 0}, "limit"),
    ("list_memories", {"cursor": "not-a-cursor"}, "cursor"),
    ("messages_list", {"page_size": 1000}, "page_size"),
    ("messages_list", {"since": "2026-02-01", "until": "2026-01-01"}, "swap"),
    ("lexical_search", {"query_text": "x" * 600}, "query_text"),
    ("neighbors", {"message_id": 0}, "message_id"),
    ("neighbors", {"message_id": 99_999}, "99999"),
    ("no_such_tool", {}, "the tools are"),
    # JSON's types as sent: true is no friend id (it was read as friend "1"), "yes" no boolean, "5" no number
    ("add_memory", {"content": "去医院复查", "memory_type": "event", "friend_id": True}, "friend_id"),
    ("add_memory", {"content": "x", "memory_key": "flag", "replace": "yes"}, "replace"),
    ("recall_memory", {"query": "电影", "friend_id": True}, "friend_id"),
    ("list_memories", {"limit": "5"}, "limit"),
    ("list_memories", {"include_shared": "off"}, "include_shared"),
    ("neighbors", {"message_id": "1"}, "message_id"),
    # a time whose UTC leaves years 1-9999: named, with what to give instead
    (
        "messages_list",
        {"until": "9999-12-31T23:59:59-05:00"},
        "until: Value error, 9999-12-31T23:59:59-05:00 is outside",
    ),
    ("lexical_search", {"query_text": "x", "filter": {"time_range": {"since": "0001-01-01T00:00:00+14:00"}}}, "since"),
    ("messages_list", {"since": "yesterday"}, "ISO-8601"),
    ("messages_list", {"since": "5"}, "is a number, not an ISO-8601 time"),  # was read as a Unix timestamp
    ("list_memories", {"limit": 5.5}, "limit"),
]


async def test_bad_input_is_a_tool_error_and_changes_nothing(db_url: str) -> None:
    """On SQLite and PostgreSQL: every bad call is an isError result that names the problem; no row changes."""
    await _load(db_url)
    before = await _snapshot(db_url)
    async with _stdio(db_url) as wb:
        for name, args, expected in BAD_CALLS:
            message = await _error(wb, name, args)
            assert expected in message, f"{name}({str(args)[:80]}): {message[:300]}"
            assert len(message) < 2000  # one readable message, not a dump
        # the server still answers after all of that
        assert (await _call(wb, "get_memory_detail", {"memory_key": "profile-job"}))["success"]
    assert await _snapshot(db_url) == before


async def test_a_line_that_is_not_json_rpc_gets_its_error_and_the_server_goes_on(sqlite_db: Path) -> None:
    """Raw stdio: not JSON -> parse error with id null; JSON but not JSON-RPC -> invalid request with the
    request's id (the SDK alone answered neither, so the client waited forever); JSON the SDK's parser
    refuses (a lone surrogate escape, deep nesting) -> parse error with the id, and nesting too deep for
    Python's parser no longer ends the server; then a normal session."""
    proc = await asyncio.create_subprocess_exec(
        AGENT_MEMORY,
        "mcp",
        "--db",
        str(sqlite_db),
        "--user",
        DEMO_USER,
        env=_env(),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None

    async def send(line: str) -> None:
        proc.stdin.write((line + "\n").encode())
        await proc.stdin.drain()

    async def answer() -> dict[str, Any]:
        return json.loads(await asyncio.wait_for(proc.stdout.readline(), timeout=30))

    try:
        await send("this is not json {")
        parse = await answer()
        assert parse["id"] is None and parse["error"]["code"] == -32700 and "jsonrpc" in parse["error"]["message"]
        await send(json.dumps({"id": 7, "method": "tools/list"}))  # no "jsonrpc": "2.0"
        invalid = await answer()
        assert invalid["id"] == 7 and invalid["error"]["code"] == -32600
        # JSON the SDK's own parser cannot read (it dropped these unanswered): half an emoji, deep nesting
        half_emoji = '{"jsonrpc": "2.0", "id": 14, "method": "ping", "params": {"text": "cut \\ud83d"}}'
        await send(half_emoji)
        unread = await answer()
        assert (
            unread["id"] == 14
            and unread["error"]["code"] == -32700
            and "whole characters" in unread["error"]["message"]
        )
        deep = {"jsonrpc": "2.0", "id": 15, "method": "ping", "params": {"m": json.loads("[" * 300 + "]" * 300)}}
        await send(json.dumps(deep))
        too_deep = await answer()
        assert too_deep["id"] == 15 and too_deep["error"]["code"] == -32700 and "nested" in too_deep["error"]["message"]
        await send("[" * 5000 + "]" * 5000)  # Python's own parser gives up too (it ended the server)
        deepest = await answer()
        assert deepest["id"] is None and deepest["error"]["code"] == -32700
        # an "id" the SDK does not take made the request a notification, never answered
        for bad_id in (None, 1.5, True, {"a": 1}, [1]):
            await send(json.dumps({"jsonrpc": "2.0", "id": bad_id, "method": "ping"}))
            refused = await answer()
            assert refused["id"] is None and refused["error"]["code"] == -32600, bad_id
            assert '"id" must be a string or an integer' in refused["error"]["message"]
        # bytes that are not UTF-8 were read as U+FFFD and the memory stored with it
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 16, "method": "ping", "params": {"text": "caf\xc3"}}\n')
        await proc.stdin.drain()
        not_utf8 = await answer()
        assert not_utf8["id"] == 16  # the client matches the answer to its request
        assert not_utf8["error"]["code"] == -32700 and "byte 0xc3" in not_utf8["error"]["message"]
        await send("")  # a blank line owes nothing: the next answer is the initialize result
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        await send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
        started = await answer()
        assert started["id"] == 1 and "serverInfo" in started["result"]
        await send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        await send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        listed = await answer()
        assert listed["id"] == 2 and {t["name"] for t in listed["result"]["tools"]} == TOOL_NAMES
    finally:
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), timeout=30)


async def test_a_friends_listing_leaves_out_what_its_search_and_detail_withhold(sqlite_db: Path) -> None:
    """A sensitive shared profile: listed for the user's own view, not for an AI friend it is not shared
    with, as search_memories and get_memory_detail for that friend withhold it."""
    async with _stdio(sqlite_db) as wb:
        await _call(
            wb, "add_memory", {"content": "我的月薪是三万元", "memory_type": "profile", "memory_key": "salary1"}
        )
        mine = await _call(wb, "list_memories", {"memory_types": ["profile"], "limit": 100})
        assert "salary1" in {i["memory_key"] for i in mine["items"]}
        friends = await _call(
            wb, "list_memories", {"memory_types": ["profile"], "friend_id": FRIEND_HELPER, "limit": 100}
        )
        listed = {i["memory_key"] for i in friends["items"]}
        assert "salary1" not in listed and "profile-job" in listed  # the rest of the shared profile stays
        found = await _call(wb, "search_memories", {"query": "月薪", "friend_id": FRIEND_HELPER})
        assert "salary1" not in {r["memory_key"] for r in found["results"]}
        withheld = await _error(wb, "get_memory_detail", {"memory_key": "salary1", "friend_id": FRIEND_HELPER})
        assert "授权" in withheld


async def test_another_user_is_served_only_its_own_memories(sqlite_db: Path) -> None:
    async with _stdio(sqlite_db, user=OTHER_USER) as wb:
        page = await _call(wb, "list_memories", {})
        assert [i["memory_key"] for i in page["items"]] == ["bob-secret"]
        assert "profile-job" in await _error(wb, "get_memory_detail", {"memory_key": "profile-job"})
        assert (await _call(wb, "messages_list", {}))["messages"] == []


# -- an AutoGen agent ---------------------------------------------------------------------------------


async def test_assistant_agent_recalls_through_the_workbench(sqlite_db: Path) -> None:
    client = replay(
        [
            call("recall_memory", {"query": "推荐一部科幻电影吧", "friend_id": FRIEND_MENTOR}),
            "知道你喜欢科幻，最近《沙丘2》口碑不错。",
        ]
    )
    async with _stdio(sqlite_db) as wb:
        agent = AssistantAgent("mentor", model_client=client, workbench=wb, reflect_on_tool_use=True)
        result = await agent.run(task="推荐个电影吧")
    executions = [m for m in result.messages if isinstance(m, ToolCallExecutionEvent)]
    assert len(executions) == 1
    (outcome,) = executions[0].content
    assert outcome.name == "recall_memory" and not outcome.is_error
    recalled = json.loads(outcome.content)
    assert any("星际穿越" in p["content"] for p in recalled["profiles"])
    assert result.messages[-1].to_text() == "知道你喜欢科幻，最近《沙丘2》口碑不错。"


# -- HTTP ---------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def _http_server(db: Path, *, token: str) -> AsyncIterator[str]:
    """``agent-memory mcp --http PORT`` on 127.0.0.1; yields the endpoint URL once it accepts connections."""
    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        *[AGENT_MEMORY, "mcp", "--db", str(db), "--user", DEMO_USER, "--http", str(port)],
        env=_env(MEMORY_SERVER_TOKEN=token),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.returncode is not None:
                raise AssertionError((await proc.communicate())[1].decode())
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "the server did not start within 60 s"
            await asyncio.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        if proc.returncode is None:
            proc.terminate()
        try:
            stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=20)
        except TimeoutError:
            proc.kill()
            stdout, stderr = await proc.communicate()
    assert stdout == b""  # nothing on stdout over HTTP either
    # clients that connected and left normally are no error (the SDK logged each as one, with a traceback)
    assert b"Traceback" not in stderr and b"Error in standalone SSE writer" not in stderr, stderr.decode()[-2000:]


_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.filterwarnings("ignore:Use `streamable_http_client` instead:DeprecationWarning")  # AutoGen's client
async def test_http_with_a_token_needs_the_bearer_header(sqlite_db: Path) -> None:
    token = "s3cret-token"
    async with _http_server(sqlite_db, token=token) as url:
        async with httpx.AsyncClient(timeout=30) as http:
            missing = await http.post(url, json=_INIT, headers=_HEADERS)
            wrong = await http.post(url, json=_INIT, headers={**_HEADERS, "Authorization": "Bearer nope"})
            right = await http.post(url, json=_INIT, headers={**_HEADERS, "Authorization": f"Bearer {token}"})
        assert missing.status_code == wrong.status_code == 401
        assert missing.headers["www-authenticate"] == "Bearer" and "Authorization" in missing.json()["message"]
        assert right.status_code == 200
        async with httpx.AsyncClient(timeout=30) as http:  # a huge request is refused before it is parsed
            huge = {**_INIT, "params": {**_INIT["params"], "padding": "x" * (3 * 1024 * 1024)}}
            refused = await http.post(url, json=huge, headers={**_HEADERS, "Authorization": f"Bearer {token}"})
        assert refused.status_code == 413
        params = StreamableHttpServerParams(url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        async with McpWorkbench(params) as wb:
            assert {t["name"] for t in await wb.list_tools()} == TOOL_NAMES
            recalled = await _call(wb, "recall_memory", {"query": "推荐一部科幻电影吧", "friend_id": FRIEND_MENTOR})
            assert any("科幻" in p["content"] for p in recalled["profiles"])


@pytest.mark.filterwarnings("ignore:Use `streamable_http_client` instead:DeprecationWarning")
async def test_http_on_loopback_without_a_token(sqlite_db: Path) -> None:
    async with _http_server(sqlite_db, token="") as url:
        async with McpWorkbench(StreamableHttpServerParams(url=url, timeout=30)) as wb:
            page = await _call(wb, "list_memories", {"memory_types": ["profile"]})
            assert {i["memory_key"] for i in page["items"]} >= {"profile-job", "profile-movies"}
        async with httpx.AsyncClient(timeout=30) as http:  # a rebound DNS name is refused on loopback
            rebound = await http.post(url, json=_INIT, headers={**_HEADERS, "Host": "evil.example:80"})
            # a body that is not UTF-8, or nested deeper than Python's parser goes, was a 500 and a traceback
            for body, said in (
                (json.dumps(_INIT).encode()[:-2] + b'"\xc3"}', "byte 0xc3"),
                (b"[" * 5000 + b"]" * 5000, "nested too deeply"),
            ):
                refused = await http.post(url, content=body, headers=_HEADERS)
                assert refused.status_code == 400, refused.text
                assert refused.json()["error"]["code"] == -32700 and said in refused.json()["error"]["message"]
            started = await http.post(url, json=_INIT, headers=_HEADERS)  # and the server goes on
            assert started.status_code == 200
        assert rebound.status_code in (400, 421)


@pytest.mark.parametrize("how", ["--host", "MEMORY_SERVER_HOST"])
def test_a_public_bind_without_a_token_is_refused(sqlite_db: Path, how: str) -> None:
    port = _free_port()
    args = [AGENT_MEMORY, "mcp", "--db", str(sqlite_db), "--user", DEMO_USER, "--http", str(port)]
    env = _env(MEMORY_SERVER_TOKEN="")
    if how == "--host":
        args += ["--host", "0.0.0.0"]
    else:
        env["MEMORY_SERVER_HOST"] = "0.0.0.0"
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "binding 0.0.0.0 needs a token" in done.stderr and "MEMORY_SERVER_TOKEN" in done.stderr
    assert done.stdout == ""
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0  # nothing listens


def test_host_without_http_is_refused(sqlite_db: Path) -> None:
    args = [AGENT_MEMORY, "mcp", "--db", str(sqlite_db), "--user", DEMO_USER, "--host", "127.0.0.1"]
    done = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "--http" in done.stderr


def test_the_readme_shows_a_client_configuration_that_matches_the_command() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", readme, flags=re.DOTALL) if "mcpServers" in b]
    assert len(blocks) == 1
    server = blocks[0]["mcpServers"]["agent-memory"]
    assert server["command"] == "agent-memory" and server["args"][0] == "mcp"
    args = server["args"]
    assert args[args.index("--user") + 1] == "alice" and "--db" in args
    assert "agent-memory mcp --db ~/memory.db --user alice" in readme
