"""Sensitive memories need an extra permission ("敏感记忆内容需要额外权限验证") on every path by
which memories reach an AI friend: the memory tools (``search_memories``, ``get_memory_detail``), the
``MemoryContext`` recall block, and the ``recall_memory`` output. The rule is
``agent_memory.domain.reach``: a sensitive memory reaches a friend only when it is that friend's, the
user shared it with that friend (``metadata["share_with"]``) or the runtime passes
``allow_sensitive=True``."""

from __future__ import annotations

import json
from types import SimpleNamespace as Row
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_core.models import FunctionExecutionResultMessage, SystemMessage

from agent_memory.context import reachable_items
from agent_memory.domain import reach, record_sensitivity, shared_with
from agent_memory.recall import RecallFinishedEvent, recall_memory_output
from agent_memory.system import MemorySystem
from agent_memory.tools import GetMemoryDetailInput, MemorySearchResultItem, MemoryToolbox, SearchMemoriesInput
from data_layer import AgentFusionDataLayer, NewMemory, Scope
from scripted import replay

#: (key, content, memory_type, friend_id, metadata): what each friend may be given is in EXPECTED.
MEMORIES: list[tuple[str, str, str, str | None, dict[str, Any]]] = [
    ("diabetes", "用户确诊了糖尿病，每天按时吃药", "profile", None, {}),
    ("coffee", "用户喜欢喝手冲咖啡，不加糖", "user_preference", None, {}),
    ("checkup", "用户每个月去医院复查一次血压", "profile", None, {"share_with": ["mentor"]}),
    ("mortgage", "用户的房贷每月八千，压力很大", "event", "mentor", {}),
    ("breakup", "用户上个月和女朋友分手了", "event", "xiaozhu", {}),
    ("marked", "用户的家庭住址在海淀区", "profile", None, {"sensitive": "marked"}),
    ("doctoral", "用户在写博士论文的第三章", "event", "xiaozhu", {}),
]
#: Which memories each view may be given: the rule, spelled out for these memories.
EXPECTED: dict[str | None, set[str]] = {
    "mentor": {"coffee", "checkup", "mortgage"},  # its own mortgage; checkup shared with it
    "xiaozhu": {"coffee", "breakup", "doctoral"},  # its own breakup; not the shared-with-mentor checkup
    None: {"diabetes", "coffee", "checkup", "marked", "doctoral"},  # the user's own view: shared profile
}
KEYS = [m[0] for m in MEMORIES]


async def _store(layer: AgentFusionDataLayer) -> None:
    await layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory(key, content, summary=content, memory_type=kind, friend_id=friend, metadata=meta)
            for key, content, kind, friend, meta in MEMORIES
        ],
    )


def _items(keys: list[str]) -> list[MemorySearchResultItem]:
    """Recall results as a ledger holds them (as if a search had returned every key)."""
    return [
        MemorySearchResultItem(
            memory_key=k,
            summary=k,
            content_preview=k,
            memory_type=kind,
            relevance_score=0.9,
            created_at="2026-01-01T00:00:00+00:00",
        )
        for k, _, kind, _, _ in MEMORIES
        if k in keys
    ]


def test_the_memories_are_as_sensitive_as_the_table_says() -> None:
    sensitive = {"diabetes", "checkup", "mortgage", "breakup", "marked"}
    for key, content, _, _, meta in MEMORIES:
        from agent_memory.domain import sensitivity

        assert (sensitivity(content=content, metadata=meta) is not None) == (key in sensitive), key
    assert shared_with({"share_with": ["mentor"]}, "mentor") and not shared_with({"share_with": ["mentor"]}, "x")
    assert shared_with({"share_with": True}, "x") and not shared_with({"share_with": {"mentor": 1}}, "mentor")


# -- the tools ------------------------------------------------------------------------------------


@pytest.mark.parametrize("friend", ["mentor", "xiaozhu", None])
async def test_the_tools_give_a_friend_only_what_may_reach_it(system: MemorySystem, friend: str | None) -> None:
    await _store(system.layer)
    box = system.toolbox(system.scope("u1", friend))
    found: set[str] = set()
    for _, content, _, _, _ in MEMORIES:
        out = await box.search_memories(SearchMemoriesInput(query=content, limit=10, min_relevance_score=0.0))
        box.consecutive_searches = 0
        assert out.success
        found |= {r.memory_key for r in out.results}
    assert found == EXPECTED[friend]
    for key in KEYS:
        detail = await box.get_memory_detail(GetMemoryDetailInput(memory_key=key))
        assert detail.success == (key in EXPECTED[friend]), key
        if not detail.success:
            assert detail.content is None and detail.summary is None


async def test_a_withheld_detail_says_a_permission_is_needed_and_is_not_counted(system: MemorySystem) -> None:
    await _store(system.layer)
    box = system.toolbox(system.scope("u1", "mentor"))
    refused = await box.get_memory_detail(GetMemoryDetailInput(memory_key="diabetes"))
    assert not refused.success and "敏感记忆" in (refused.message or "") and "授权" in (refused.message or "")
    assert "糖尿病" not in refused.model_dump_json()
    hidden = await box.get_memory_detail(GetMemoryDetailInput(memory_key="breakup"))  # another friend's: not found
    assert not hidden.success and "未找到" in (hidden.message or "")
    record = await system.layer.memory.retrieve_memory(memory_key="diabetes", user_id="u1", touch=False)
    assert record is not None and record.access_count == 0  # a withheld memory is not touched
    assert box.ledger.details == []


async def test_the_runtime_may_allow_sensitive_memories_a_model_cannot(system: MemorySystem) -> None:
    await _store(system.layer)
    allowed = MemoryToolbox(system.search, scope=system.scope("u1", "mentor"), allow_sensitive=True)
    out = await allowed.search_memories(SearchMemoriesInput(query="糖尿病 吃药", min_relevance_score=0.0))
    assert "diabetes" in {r.memory_key for r in out.results}
    detail = await allowed.get_memory_detail(GetMemoryDetailInput(memory_key="diabetes"))
    assert detail.success and detail.content == "用户确诊了糖尿病，每天按时吃药"
    assert "breakup" not in {r.memory_key for r in out.results}  # the scope still decides visibility
    assert "allow_sensitive" not in json.dumps(SearchMemoriesInput.model_json_schema())
    assert "allow_sensitive" not in json.dumps(GetMemoryDetailInput.model_json_schema())


# -- recall_memory --------------------------------------------------------------------------------


async def test_recall_memory_withholds_a_sensitive_profile_from_a_friend(system: MemorySystem) -> None:
    await _store(system.layer)
    request = {"query": "我的糖尿病要注意什么？还有咖啡能喝吗", "friend_id": "mentor", "similarity_threshold": 0.0}
    out = await system.recall_memory(user_id="u1", request=request)
    text = out.model_dump_json()
    assert "糖尿病" not in text  # the sensitive shared profile
    assert "手冲咖啡" in text  # a non-sensitive profile still arrives
    mine = await system.recall_memory(user_id="u1", request={**request, "query": "房贷压力"})
    assert "房贷每月八千" in mine.model_dump_json()  # the friend's own sensitive event


@pytest.mark.parametrize("friend", ["mentor", "xiaozhu", None])
async def test_recall_memory_output_checks_each_memory_again(layer: AgentFusionDataLayer, friend: str | None) -> None:
    await _store(layer)
    scope = Scope.of("u1", friend)
    out = await recall_memory_output(layer, scope, _items(KEYS), profile_topk=10, event_topk=10)
    given = {p.content for p in out.profiles} | {e.content for e in out.events}
    assert given == {content for key, content, *_ in MEMORIES if key in EXPECTED[friend]}
    allowed = await recall_memory_output(
        layer, scope, _items(KEYS), profile_topk=10, event_topk=10, allow_sensitive=True
    )
    visible = {content for _, content, _, owner, _ in MEMORIES if scope.sees_record(Row(user_id="u1", friend_id=owner))}
    assert {p.content for p in allowed.profiles} | {e.content for e in allowed.events} == visible


# -- the MemoryContext recall block -----------------------------------------------------------------------


@pytest.mark.parametrize("friend", ["mentor", "xiaozhu", None])
async def test_the_block_gate_checks_each_memory_again(layer: AgentFusionDataLayer, friend: str | None) -> None:
    """Even items a search should never have returned (a ledger holding every key) are gated."""
    await _store(layer)
    kept = await reachable_items(layer, Scope.of("u1", friend), _items([*KEYS, "no-such-key"]))
    assert {i.memory_key for i in kept} == EXPECTED[friend]
    assert [i.memory_key for i in kept] == [k for k in KEYS if k in EXPECTED[friend]]  # order kept
    assert await reachable_items(layer, Scope.of("u1", friend), []) == []


async def test_the_recall_block_of_a_friend_leaves_out_sensitive_memories(system: MemorySystem) -> None:
    await _store(system.layer)
    await system.layer.settings.update(user_id="u1", patch={"memory": {"similarity_threshold": 0.0}})
    events: Any = __import__("asyncio").Queue()
    context = system.context(user_id="u1", friend_id="mentor", events=events, persist=False)
    client = replay(["好的"])
    agent = AssistantAgent("main", model_client=client, model_context=context)
    await agent.run(task="我的糖尿病和血压怎么样了？咖啡还能喝吗？")
    block = [m.content for m in client.create_calls[0]["messages"] if isinstance(m, SystemMessage)]
    recall = [b for b in block if str(b).startswith("[记忆召回]")]
    assert recall, block
    assert "[memory:coffee:" in recall[0] and "[memory:checkup:" in recall[0]  # non-sensitive; shared with mentor
    assert "diabetes" not in recall[0] and "糖尿病" not in recall[0]
    finished = [e for e in _drain(events) if isinstance(e, RecallFinishedEvent)]
    assert finished and "diabetes" not in finished[-1].memory_keys and "coffee" in finished[-1].memory_keys


async def test_the_simulated_recall_memory_call_leaves_them_out_too(system: MemorySystem) -> None:
    await _store(system.layer)
    await system.layer.settings.update(user_id="u1", patch={"memory": {"similarity_threshold": 0.0}})
    options = system.recall_options.model_copy(update={"injection": "tool_call"})
    context = system.context(user_id="u1", friend_id="xiaozhu", options=options, persist=False)
    client = replay(["好的"])
    await AssistantAgent("main", model_client=client, model_context=context).run(task="医院复查血压，还有咖啡")
    results = [m for m in client.create_calls[0]["messages"] if isinstance(m, FunctionExecutionResultMessage)]
    assert results
    output = json.loads(results[0].content[0].content)
    text = json.dumps(output, ensure_ascii=False)
    assert "手冲咖啡" in text and "复查" not in text  # checkup is shared with mentor only


# -- one rule ----------------------------------------------------------------------------------------------


async def test_every_path_follows_the_one_rule(system: MemorySystem) -> None:
    """For each memory and view: the tools, the block gate and recall_memory agree with ``reach``."""
    await _store(system.layer)
    records = await system.layer.memory.get_many(user_id="u1", memory_keys=KEYS)
    for friend in ("mentor", "xiaozhu", "stranger", None):
        scope = system.scope("u1", friend)
        rule = {k for k, r in records.items() if reach(scope, r)}
        assert rule == {k for k, r in records.items() if reach(scope, r).seen and reach(scope, r).withheld is None}
        box = system.toolbox(scope)
        details = {k for k in KEYS if (await box.get_memory_detail(GetMemoryDetailInput(memory_key=k))).success}
        gate = {i.memory_key for i in await reachable_items(system.layer, scope, _items(KEYS))}
        out = await recall_memory_output(system.layer, scope, _items(KEYS), profile_topk=10, event_topk=10)
        given = {p.content for p in out.profiles} | {e.content for e in out.events}
        assert details == gate == rule, friend
        assert given == {records[k].content for k in rule}, friend
    assert record_sensitivity(records["marked"]) == "marked"


def _drain(queue: Any) -> list[Any]:
    items = []
    while not queue.empty():
        items.append(queue.get_nowait())
    return items
