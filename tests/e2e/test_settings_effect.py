"""Every ``MEMORY_*`` variable reaches the part it configures through the composition root."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from autogen_agentchat.messages import ToolCallRequestEvent

from agent_memory.settings import AgentMemorySettings
from agent_memory.system import MemorySystem
from agent_memory.tools import ToolLimits
from data_layer import NewMemory

CHECKS: dict[str, tuple[str, Callable[[MemorySystem], Any], Any]] = {
    "MEMORY_SEARCH_DEFAULT_MODE": ("keyword", lambda s: s.search.default_mode, "keyword"),
    "MEMORY_SEARCH_KEYWORD_WEIGHT": ("0.5", lambda s: s.search.weights.keyword, 0.5),
    "MEMORY_SEARCH_TEXT_SIMILARITY_WEIGHT": ("0.3", lambda s: s.search.weights.text, 0.3),
    "MEMORY_SEARCH_TIME_DECAY_WEIGHT": ("0.1", lambda s: s.search.weights.time, 0.1),
    "MEMORY_SEARCH_HALF_LIFE_DAYS": ("7", lambda s: s.search.half_life_days, 7.0),
    "MEMORY_SEARCH_EMBEDDER": ("wordvec-zh", lambda s: s.search.embedder.name.startswith("wordvec-"), True),
    "MEMORY_SEARCH_SEMANTIC_SHARE": ("0.3", lambda s: s.search.semantic_share, 0.3),
    "MEMORY_SEARCH_WORD_NEIGHBOURS": ("false", lambda s: s.search.neighbours, None),
    "MEMORY_SEARCH_INDEX": ("store", lambda s: s.search.index, "store"),
    "MEMORY_SEARCH_INDEX_CACHE_MB": ("64", lambda s: s.search.index_cache_mb, 64.0),
    "MEMORY_SEARCH_INDEX_SNAPSHOT_DIR": ("off", lambda s: s.search.snapshots is None, True),
    "MEMORY_EXTRACTION_MAX_KEYWORDS": ("3", lambda s: s.search.analyzer.extractor.max_keywords, 3),
    "MEMORY_EXTRACTION_MIN_KEYWORD_WEIGHT": ("0.4", lambda s: s.search.analyzer.extractor.min_weight, 0.4),
    "MEMORY_EXTRACTION_ENABLE_SYNONYM_EXPANSION": ("false", lambda s: s.search.synonym_expansion, False),
    "MEMORY_TOOLS_PROACTIVE_SEARCH_THRESHOLD": (
        "0.65",
        lambda s: s.toolbox(s.scope("u1")).limits.default_min_score,
        0.65,
    ),
    "MEMORY_TOOLS_MAX_RESULTS_PER_SEARCH": ("4", lambda s: s.toolbox(s.scope("u1")).limits.max_results, 4),
    "MEMORY_RECALL_ROUNDS": ("5", lambda s: s.recall_agent(s.scope("u1")).limits.rounds, 5),
    "MEMORY_RECALL_PROFILE_TOP_K": ("2", lambda s: s.layer.settings.defaults.memory.profile_top_k, 2),
    "MEMORY_RECALL_EVENT_TOP_K": ("3", lambda s: s.layer.settings.defaults.memory.event_top_k, 3),
    "MEMORY_RECALL_SIMILARITY_THRESHOLD": ("0.6", lambda s: s.layer.settings.defaults.memory.similarity_threshold, 0.6),
    "MEMORY_RECALL_ENABLED": ("false", lambda s: s.layer.settings.defaults.memory.enabled, False),
    "MEMORY_RECALL_WINDOW_SIZE": ("9", lambda s: s.context(user_id="u1").options.window_size, 9),
    "MEMORY_RECALL_MAX_ITERATIONS": ("2", lambda s: s.recall_agent(s.scope("u1")).max_iterations, 2),
    "MEMORY_RECALL_TIME_BUDGET_S": ("1.5", lambda s: s.context(user_id="u1").options.time_budget_s, 1.5),
    "MEMORY_RECALL_TOKEN_BUDGET": ("300", lambda s: s.context(user_id="u1").options.slot_token_budget, 300),
    "MEMORY_RECALL_INJECTION": ("tool_call", lambda s: s.context(user_id="u1").options.injection, "tool_call"),
    "MEMORY_CONTEXT_TOKEN_BUDGET": ("3000", lambda s: s.context(user_id="u1").options.history_token_budget, 3000),
    "MEMORY_ARCHIVE_THRESHOLD": ("20000", lambda s: s.context(user_id="u1").archive.threshold, 20000),
    "MEMORY_EXEC_TIMEOUT_S": ("4", lambda s: s.executor(user_id="u1").limits.timeout_s, 4.0),
    "MEMORY_EXEC_CPU_S": ("3", lambda s: s.executor(user_id="u1").limits.cpu_s, 3),
    "MEMORY_EXEC_MEMORY_MB": ("256", lambda s: s.executor(user_id="u1").limits.memory_mb, 256),
    "MEMORY_EXEC_MAX_PROCESSES": ("16", lambda s: s.executor(user_id="u1").limits.processes, 16),
    "MEMORY_EXEC_BWRAP": ("/nonexistent/bwrap", lambda s: s.executor(user_id="u1").isolation.bwrap, None),
    "MEMORY_EXEC_ALLOW_UNISOLATED": ("true", lambda s: s.executor(user_id="u1").allow_unisolated, True),
    "MEMORY_TOOLS_ENABLE_CODE_EXECUTION": ("true", lambda s: "run_code" in _tool_names(s), True),
    "MEMORY_SESSIONS_ENABLED": ("false", lambda s: s.background_archiving, False),
    "MEMORY_SESSIONS_IDLE_MINUTES": ("5", lambda s: s.session_archiver.idle.total_seconds(), 300.0),
    "MEMORY_SESSIONS_MAX_MESSAGES": ("12", lambda s: s.session_archiver.max_messages, 12),
    "MEMORY_CHAT_SHOW_TOOL_CALLS": ("true", lambda s: s.layer.settings.defaults.chat.show_tool_calls, True),
    "MEMORY_CHAT_SHOW_THINKING": ("true", lambda s: s.layer.settings.defaults.chat.show_thinking, True),
}


def _tool_names(system: MemorySystem) -> list[str]:
    from builders import AgentBuilder

    return [t.name for t in AgentBuilder(system).with_memory({}, user_id="u1")["tools"]]


COMPANIONS = {
    "MEMORY_SEARCH_KEYWORD_WEIGHT": {"MEMORY_SEARCH_TEXT_SIMILARITY_WEIGHT": "0.3"},
    "MEMORY_SEARCH_TEXT_SIMILARITY_WEIGHT": {"MEMORY_SEARCH_KEYWORD_WEIGHT": "0.5"},
    "MEMORY_SEARCH_TIME_DECAY_WEIGHT": {"MEMORY_SEARCH_KEYWORD_WEIGHT": "0.5"},
}
#: Shown by their own tests: the database URL (every test), proactive search and the language
#: (test_agent_builder), the recall model client (test_recall), the archiving model client
#: (test_archive_model); the serving settings by the web and
#: MCP tests (test_web_api: the chat model client replaces the offline responder, a host other than
#: loopback needs a token, the token is required; test_mcp); the spans' text by test_telemetry.
ELSEWHERE = {
    "MEMORY_DATABASE_URL",
    "MEMORY_TOOLS_ENABLE_PROACTIVE_SEARCH",
    "MEMORY_LANGUAGE",
    "MEMORY_RECALL_MODEL_CLIENT",
    "MEMORY_SERVER_HOST",
    "MEMORY_SERVER_TOKEN",
    "MEMORY_CHAT_MODEL_CLIENT",
    "MEMORY_ARCHIVE_MODEL_CLIENT",
    "MEMORY_TELEMETRY_CONTENT",
    # the embedding endpoint's: test_embedding_endpoint (its URL, model, dimension, key, time-out)
    "MEMORY_SEARCH_EMBEDDING_URL",
    "MEMORY_SEARCH_EMBEDDING_MODEL",
    "MEMORY_SEARCH_EMBEDDING_DIM",
    "MEMORY_SEARCH_EMBEDDING_API_KEY",
    "MEMORY_SEARCH_EMBEDDING_TIMEOUT_S",
}


def test_every_setting_is_checked() -> None:
    assert set(CHECKS) | ELSEWHERE == {name.upper() for name in AgentMemorySettings.model_fields}


@pytest.mark.parametrize("name", sorted(CHECKS))
async def test_a_setting_reaches_its_part(name: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    value, read, expected = CHECKS[name]
    for other, other_value in COMPANIONS.get(name, {}).items():  # the three weights add up to 1
        monkeypatch.setenv(other, other_value)
    monkeypatch.setenv(name, value)
    monkeypatch.setenv("MEMORY_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'm.db'}")
    async with MemorySystem.from_settings() as system:
        assert read(system) == expected
        default = AgentMemorySettings.model_fields[name.lower()].default
        assert expected != default  # the check could fail: the value differs from the default


async def test_rounds_beyond_three_really_run(system: MemorySystem) -> None:
    rounds = 4
    words = ["周末", "徒步", "爬山", "山顶", "日出", "露营", "背包", "溪流", "帐篷", "篝火"]
    now = datetime.now(UTC)
    spans = {"half": words[:5], "forty": words[5:9], "thirty": words[:3], "tenth": words[9:]}
    memories = [
        NewMemory(key, " ".join(part), created_at=now - timedelta(days=3 * n))
        for n, (key, part) in enumerate(spans.items())
    ]
    memories.append(NewMemory("badminton", "上周 打 羽毛球 很开心", created_at=now - timedelta(days=20)))
    await system.layer.memory.add_many(user_id="u1", memories=memories)
    system.search.neighbours = None  # the words are near in meaning: with neighbours round 3 finds all and ends
    events: list[Any] = []
    settings = system.settings.recall_settings().model_copy(update={"rounds": rounds})
    agent = system.recall_agent(system.scope("u1"), settings=settings, on_event=events.append)
    result = await agent.recall([("user", "上周 打 羽毛球"), ("user", " ".join(words))])
    calls = [c.name for e in events if isinstance(e, ToolCallRequestEvent) for c in e.content]
    assert calls.count("search_memories") == rounds == len(result.ledger.searches)
    assert [s.arguments.min_relevance_score for s in result.ledger.searches] == [0.7, 0.6, 0.5, 0.5]
    assert "羽毛球" in result.ledger.searches[3].arguments.query  # the context round adds earlier messages
    assert ToolLimits(rounds=5).max_consecutive_searches == 5  # five rounds are not cut at the default three


async def test_the_index_cache_cap_drops_idle_users(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """MEMORY_SEARCH_INDEX_CACHE_MB: under a cap too small for two indexes only the last user's stays loaded;
    MEMORY_SEARCH_INDEX_SNAPSHOT_DIR: the built indexes are saved there (one file per user)."""
    monkeypatch.chdir(tmp_path)
    for cap, expected in ((None, ["u1", "u2"]), ("0.001", ["u2"])):
        url = f"sqlite+aiosqlite:///{tmp_path / ('a.db' if cap is None else 'b.db')}"
        if cap is not None:
            monkeypatch.setenv("MEMORY_SEARCH_INDEX_CACHE_MB", cap)
        folder = tmp_path / ("snaps" if cap is None else "snaps-capped")
        monkeypatch.setenv("MEMORY_SEARCH_INDEX_SNAPSHOT_DIR", str(folder))
        async with MemorySystem.from_settings(database_url=url) as system:
            await system.ensure_schema()
            for user in ("u1", "u2"):
                await system.layer.memory.add(user_id=user, memory_key="k1", content="咖啡 coffee beans")
                assert await system.search.search("咖啡", user_id=user)
            assert system.search.cached_users() == expected
            assert system.search.snapshots is not None
            assert len(list(system.search.snapshots.folder.glob("*.idx"))) == 2


async def test_the_recall_rounds_keep_their_caps_while_the_main_agents_tools_are_capped(db_url: str) -> None:
    """``MEMORY_TOOLS_MAX_RESULTS_PER_SEARCH`` caps the main agent's memory tools; the recall's rounds
    keep the default caps (5, 8, 10), so the ranked list the recall and the evidence recall hand on is
    not cut to the first few memories."""
    from agent_memory.settings import load_settings
    from agent_memory.system import MemorySystem
    from data_layer import NewMemory

    settings = load_settings(memory_database_url=db_url, memory_tools_max_results_per_search=3)
    async with MemorySystem.from_settings(settings) as system:
        await system.layer.memory.add_many(
            user_id="u1",
            memories=[
                NewMemory(f"trip-{i}", f"第{i}次去北京出差，住在朝阳区", memory_type="profile") for i in range(12)
            ],
        )
        scope = system.scope("u1", "f1")
        result = await system.recall_agent(scope).recall([("user", "去北京出差住在哪里")])
        limits = [s.arguments.limit for s in result.ledger.searches]
        assert limits[0] == 5 and limits[-1] == 10  # the first round's and the last round's own caps
        assert max(len(s.output.results) for s in result.ledger.searches) == 10
        evidence = await system.evidence_agent(scope).recall("去北京出差住在哪里")
        assert len([h for h in evidence.ranked if h.memory_key]) == 10
        from agent_memory.tools import SearchMemoriesInput

        main = await system.toolbox(scope).search_memories(SearchMemoriesInput(query="北京出差", limit=10))
        assert main.success and main.total_found == 3
