"""OpenTelemetry spans, caught by the SDK's in-memory exporter: one chat turn through MemoryContext under
AutoGen's own spans, a web chat turn, an archiving run and an MCP tool call; memory text, messages and
user ids stay out of every attribute unless ``MEMORY_TELEMETRY_CONTENT`` asks for them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from agent_framework import Agent
from autogen_agentchat.agents import AssistantAgent
from autogen_core.models import CreateResult
from autogen_ext.models.replay import ReplayChatCompletionClient
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_memory.integrations.agent_framework import MemoryContextProvider
from agent_memory.mcp import MemoryMcpTools
from agent_memory.system import MemorySystem
from agent_memory.telemetry import MemorySpan, content_recorded, note, record_content, span
from agent_memory.web import create_app
from data_layer import NewMemory
from scripted import MODEL_INFO, replay
from scripted_agent_framework import ScriptedChatClient

NOW = datetime.now(UTC)
USER = "telemetry-user-7f3a"
MEMORY = "用户工作压力大，下周要向管理层做季度项目汇报"
MESSAGE = "最近汇报压力好大，怎么准备？"


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    """The process's tracer provider (set once: OpenTelemetry allows one) with an in-memory exporter."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    exporter.clear()
    yield exporter
    exporter.clear()


async def _with_memory(system: MemorySystem) -> MemorySystem:
    await system.layer.memory.add_many(
        user_id=USER,
        memories=[
            NewMemory(
                "report",
                MEMORY,
                summary="下周季度项目汇报，压力大",
                memory_type="event",
                friend_id="mentor",
                created_at=NOW - timedelta(days=2),
            )
        ],
    )
    return system


@pytest.fixture
async def memory(system: MemorySystem) -> MemorySystem:
    return await _with_memory(system)


@pytest.fixture
async def content_memory(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("MEMORY_TELEMETRY_CONTENT", "true")
    system = MemorySystem.open(db_url)
    await system.ensure_schema()
    assert content_recorded()
    yield await _with_memory(system)
    await system.close()
    record_content(False)  # process-wide: the next tests start without


def tree(finished: Sequence[ReadableSpan]) -> list[str]:
    """The spans as indented names, parents first, in start order."""
    children: dict[int | None, list[ReadableSpan]] = {}
    ids = {s.context.span_id for s in finished}
    for s in sorted(finished, key=lambda s: s.start_time or 0):
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in ids else None
        children.setdefault(parent, []).append(s)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for s in children.get(parent, []):
            lines.append("  " * depth + s.name)
            walk(s.context.span_id, depth + 1)

    walk(None, 0)
    return lines


def ancestors(s: ReadableSpan, finished: Sequence[ReadableSpan]) -> list[str]:
    by_id = {x.context.span_id: x for x in finished}
    names: list[str] = []
    while s.parent is not None and s.parent.span_id in by_id:
        s = by_id[s.parent.span_id]
        names.append(s.name)
    return names


def texts(finished: Sequence[ReadableSpan]) -> str:
    """Every attribute value of every span (and of its events), as one text."""
    values: list[str] = []
    for s in finished:
        values += [str(v) for v in (s.attributes or {}).values()]
        for event in s.events:
            values += [str(v) for v in (event.attributes or {}).values()]
    return "\n".join(values)


def named(finished: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in finished if s.name == name]


async def _turn(system: MemorySystem) -> None:
    context = system.context(user_id=USER, friend_id="mentor")
    agent = AssistantAgent("main", model_client=replay(["先列出汇报的结论。"]), model_context=context)
    result = await agent.run(task=MESSAGE)
    assert result.messages[-1].content == "先列出汇报的结论。"
    assert "[memory:report:" in context.last_block


async def test_a_chat_turn_nests_recall_and_searches_under_autogens_spans(
    memory: MemorySystem, spans: InMemorySpanExporter
) -> None:
    await _turn(memory)
    finished = spans.get_finished_spans()
    print("\n".join(tree(finished)))
    (recall,) = named(finished, "agent_memory.recall")
    assert ancestors(recall, finished)[-1] == "invoke_agent main"  # AutoGen's span of the main agent's turn
    searches = named(finished, "agent_memory.search")
    assert searches
    for search in searches:
        assert ancestors(search, finished)[:2] == ["invoke_agent mem_recall", "agent_memory.recall"]
    attrs = recall.attributes or {}
    assert attrs["agent_memory.recall.rounds"] == len(searches)
    assert attrs["agent_memory.recall.tool_calls"] >= len(searches) + 1  # and the handoff
    assert attrs["agent_memory.recall.timed_out"] is False
    assert attrs["agent_memory.recall.memories_found"] >= 1
    rounds = [s.attributes or {} for s in sorted(searches, key=lambda s: s.start_time or 0)]
    assert [r["agent_memory.search.round"] for r in rounds] == list(range(1, len(rounds) + 1))
    assert rounds[0]["agent_memory.search.mode"] == "keyword"  # the precise first round
    assert all(r["agent_memory.search.candidates"] == 1 for r in rounds)  # the user's one memory for this friend
    assert max(r["agent_memory.search.results"] for r in rounds) == 1
    # no memory text, message, query or user id in any attribute
    everything = texts(finished)
    for secret in (USER, MEMORY, "季度项目汇报", MESSAGE, "汇报"):
        assert secret not in everything


async def test_with_content_recorded_the_text_is_there(
    content_memory: MemorySystem, spans: InMemorySpanExporter
) -> None:
    await _turn(content_memory)
    finished = spans.get_finished_spans()
    (recall,) = named(finished, "agent_memory.recall")
    assert (recall.attributes or {})["agent_memory.recall.message"] == MESSAGE
    searches = [s.attributes or {} for s in named(finished, "agent_memory.search")]
    assert all("汇报" in str(s["agent_memory.search.query"]) for s in searches)
    assert any(
        f"report: {MEMORY}"[:8] in m and "季度项目汇报" in m
        for s in searches
        for m in s["agent_memory.search.memories"]
    )
    assert USER not in texts(finished)  # ids are no content: never


class HangingClient(ReplayChatCompletionClient):
    """A recall model that never answers (a busy one-slot server): ``called`` is set once it is asked."""

    def __init__(self) -> None:
        super().__init__(["never"], model_info=MODEL_INFO)
        self.called = asyncio.Event()

    async def create(self, *args: Any, **kwargs: Any) -> CreateResult:
        self.called.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def test_a_recall_cancelled_by_its_time_budget_says_it_timed_out(
    memory: MemorySystem, spans: InMemorySpanExporter
) -> None:
    client = HangingClient()
    agent = memory.recall_agent(memory.scope(USER, "mentor"), model_client=client)
    task = asyncio.create_task(agent.recall([("user", MESSAGE)]))
    await client.called.wait()
    task.cancel()  # what the caller's asyncio.timeout does when the budget runs out
    with pytest.raises(asyncio.CancelledError):
        await task
    (recall,) = named(spans.get_finished_spans(), "agent_memory.recall")
    attrs = recall.attributes or {}
    assert attrs["agent_memory.recall.timed_out"] is True
    assert attrs["agent_memory.recall.handoff"] is False
    assert attrs["agent_memory.recall.rounds"] == 0


async def test_an_archiving_run_counts_its_sessions_and_memories(
    memory: MemorySystem, spans: InMemorySpanExporter
) -> None:
    for role, text in [("user", "我下周六要搬家到杭州了"), ("assistant", "搬家辛苦了，需要帮忙列清单吗？")]:
        await memory.layer.messages.append(user_id=USER, friend_id="mentor", role=role, content=text)
    report = await memory.session_archiver.run(user_id=USER, friend_id="mentor", end_open=True)
    (run,) = [
        s
        for s in named(spans.get_finished_spans(), "agent_memory.formation")
        if (s.attributes or {})["agent_memory.formation.end_open"]
    ]
    attrs = run.attributes or {}
    assert attrs["agent_memory.formation.sessions"] == report.sessions == 1
    assert attrs["agent_memory.formation.memories"] == len(report.memory_keys) >= 1
    assert attrs["agent_memory.formation.messages"] == 2
    assert "杭州" not in texts(spans.get_finished_spans())


async def test_every_search_is_a_span_whoever_asks(memory: MemorySystem, spans: InMemorySpanExporter) -> None:
    """A search made straight through the engine (the web memory page, the CLI) is traced as a recall
    round's is, once, without the round; none carries the query or a memory's text."""
    hits = await memory.search.search("季度汇报", user_id=USER, friend_id="mentor")
    assert [h.memory_key for h in hits] == ["report"]
    (search,) = named(spans.get_finished_spans(), "agent_memory.search")
    attributes = dict(search.attributes or {})
    assert attributes["agent_memory.search.results"] == 1 and "agent_memory.search.round" not in attributes
    assert attributes["agent_memory.search.candidates"] >= 1  # the pipeline notes its candidates in it
    assert "季度" not in texts(spans.get_finished_spans())


async def test_an_mcp_tool_call_is_a_span_around_its_search(memory: MemorySystem, spans: InMemorySpanExporter) -> None:
    tools = MemoryMcpTools(memory, user_id=USER)
    out = await tools.call("search_memories", {"query": "季度汇报", "friend_id": "mentor"})
    assert out["results"][0]["memory_key"] == "report"
    finished = spans.get_finished_spans()
    (call,) = named(finished, "agent_memory.mcp.tool")
    assert (call.attributes or {})["agent_memory.mcp.tool"] == "search_memories"
    (search,) = named(finished, "agent_memory.search")
    assert ancestors(search, finished) == ["agent_memory.mcp.tool"]
    with pytest.raises(Exception, match="unknown tool"):
        await tools.call("mystery: 季度汇报", {})
    unknown = named(spans.get_finished_spans(), "agent_memory.mcp.tool")[-1]
    assert (unknown.attributes or {})["agent_memory.mcp.tool"] == "unknown"
    assert (unknown.attributes or {})["error.type"] == "McpToolError"
    assert "季度" not in texts(spans.get_finished_spans())


async def test_a_web_chat_turn_is_one_request_span_with_the_turn_inside(
    memory: MemorySystem, spans: InMemorySpanExporter
) -> None:
    app = create_app(memory)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        assert (await client.post("/api/session", json={"name": USER})).status_code == 200
        friend = (await client.post("/api/friends", json={"name": "导师"})).json()["id"]
        await memory.layer.memory.upsert(
            user_id=USER, memory_key="report-web", memory_type="event", friend_id=friend, content=MEMORY
        )
        spans.clear()
        response = await client.post(f"/api/friends/{friend}/chat", json={"message": MESSAGE})
        assert response.status_code == 200
        assert MEMORY in response.text  # the offline responder answers from the recalled memory
    finished = spans.get_finished_spans()
    print("\n".join(tree(finished)))
    (request,) = named(finished, "agent_memory.web.request")
    attrs = request.attributes or {}
    assert attrs["http.route"] == "/api/friends/{friend_id}/chat"  # the template: no friend id
    assert attrs["http.request.method"] == "POST"
    assert attrs["http.response.status_code"] == 200
    (recall,) = named(finished, "agent_memory.recall")
    assert "agent_memory.web.request" in ancestors(recall, finished)
    everything = texts(finished)
    for secret in (USER, MEMORY, MESSAGE, friend):
        assert secret not in everything


def test_text_cannot_become_an_attribute_by_mistake(spans: InMemorySpanExporter) -> None:
    record_content(False)
    with span("agent_memory.example") as traced:
        assert isinstance(traced, MemorySpan)
        with pytest.raises(TypeError, match="takes a number or a boolean"):
            traced.set("agent_memory.example.query", "我的秘密")
        traced.content("agent_memory.example.query", "我的秘密")  # content is off: dropped
        note("agent_memory.other", {"agent_memory.example.count": 1})  # not the open span: dropped
        note("agent_memory.example", {"agent_memory.example.found": True})
    (done,) = spans.get_finished_spans()
    assert dict(done.attributes or {}) == {"agent_memory.example.found": True}


async def test_an_agent_framework_run_nests_the_recall_under_the_frameworks_span(
    memory: MemorySystem, spans: InMemorySpanExporter
) -> None:
    client = ScriptedChatClient(["先列出汇报的结论。"])
    provider = MemoryContextProvider(memory, user_id=USER, friend_id="mentor")
    await Agent(client, "你是职场导师。", name="mentor", context_providers=[provider]).run(MESSAGE)
    finished = spans.get_finished_spans()
    print("\n".join(tree(finished)))
    (recall,) = named(finished, "agent_memory.recall")
    assert ancestors(recall, finished)[-1] == "invoke_agent mentor"  # the framework's span of the run
    for secret in (USER, MEMORY, MESSAGE):
        assert secret not in texts([s for s in finished if s.name.startswith("agent_memory.")])
