"""Input that used to slip through or fail with a raw exception, each now a clear one-line error (or
handled): a profile memory for one friend, unbounded key lists, a ``now`` at the edge of time, lone
surrogates in code, non-string metadata keys, a blank server token, a recall out of time."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_memory.cli import app
from agent_memory.settings import SettingsError, load_settings
from agent_memory.slots import CommandExecutor, Limits, SlotValue
from agent_memory.system import MemorySystem
from data_layer import MAX_GET_MANY, AgentFusionDataLayer, InvalidInputError, NewMemory, Scope
from test_sandbox import require_isolation, work_folder

runner = CliRunner()


# -- a profile is shared by every friend: one rule for the library, the CLI and the MCP server -----------


async def test_a_profile_memory_for_one_friend_is_refused_by_every_write(layer: AgentFusionDataLayer) -> None:
    for kind in ("profile", "user_preference"):
        with pytest.raises(InvalidInputError, match=r"shared by every AI friend.*leave friend_id"):
            await layer.memory.add(user_id="u1", memory_key="p1", content="喜欢爬山", memory_type=kind, friend_id="f")
        with pytest.raises(InvalidInputError, match="shared by every AI friend"):
            await layer.memory.upsert(
                user_id="u1", memory_key="p1", content="喜欢爬山", memory_type=kind, friend_id="f"
            )
        with pytest.raises(InvalidInputError, match="shared by every AI friend"):
            await layer.memory.add_many(
                user_id="u1", memories=[NewMemory("p2", "喜欢游泳", memory_type=kind, friend_id="f")]
            )
    assert await layer.memory.get_many(user_id="u1", memory_keys=["p1", "p2"]) == {}  # nothing was written
    shared = await layer.memory.add(user_id="u1", memory_key="p1", content="喜欢爬山", memory_type="profile")
    assert shared.friend_id is None


def test_the_command_line_refuses_it_as_the_mcp_server_does(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"
    args = ["memory", "add", "p1", "喜欢爬山", "--type", "profile", "--friend", "f", "--user", "u1", "--url", url]
    out = runner.invoke(app, args)
    assert out.exit_code == 2 and "shared by every AI friend" in out.output and "--friend" in out.output
    assert "Traceback" not in out.output
    listed = runner.invoke(app, ["memory", "list", "--user", "u1", "--json", "--url", url])
    assert "p1" not in listed.output


# -- bounded key lists -------------------------------------------------------------------------------


async def test_get_many_takes_at_most_a_page_of_keys(layer: AgentFusionDataLayer) -> None:
    await layer.memory.add(user_id="u1", memory_key="k0", content="x")
    page = [f"k{i}" for i in range(MAX_GET_MANY)]
    assert set(await layer.memory.get_many(user_id="u1", memory_keys=page)) == {"k0"}
    with pytest.raises(InvalidInputError, match=f"{MAX_GET_MANY + 1} keys.*at most {MAX_GET_MANY}.*pages"):
        await layer.memory.get_many(user_id="u1", memory_keys=[*page, "k-last"])


# -- a now at the edge of time -------------------------------------------------------------------------


async def test_a_search_at_the_edge_of_time_is_no_overflow(system: MemorySystem) -> None:
    await system.layer.memory.add(
        user_id="u1", memory_key="hike", content="周末去爬山", created_at=datetime(1, 1, 1, 12, tzinfo=UTC)
    )
    early = await system.search.search("爬山", user_id="u1", now=datetime(1, 1, 2, tzinfo=UTC), time_range_days=30)
    assert [h.memory_key for h in early] == ["hike"]  # the range starts at the earliest time there is
    late = await system.search.search("爬山", user_id="u1", now=datetime(9999, 12, 31, tzinfo=UTC), time_range_days=30)
    assert list(late) == []  # created long before the 30 days up to then


# -- lone surrogates in code ---------------------------------------------------------------------------


async def test_a_lone_surrogate_is_a_clear_error_in_code_and_safe_in_a_slot(
    layer: AgentFusionDataLayer, tmp_path: Path
) -> None:
    executor = CommandExecutor(
        layer,
        scope=Scope.of("u1"),
        limits=Limits(timeout_s=20),
        save_runs=False,
        isolation=require_isolation(),
        workdir=work_folder(tmp_path / "w"),
    )
    refused = await executor.execute_with_memory_env("_result = '\ud800'", {})
    assert not refused.success and "lone surrogate (U+D800) at position 11" in (refused.error or "")
    slot = SlotValue("k", "s", "a\udcffb")
    ran = await executor.execute_with_memory_env("_result = len([memory:k])", {"k": slot})
    assert ran.success and ran.result == 3, ran.error  # the value reached the code as it is


# -- metadata keys ------------------------------------------------------------------------------------


async def test_metadata_keys_must_be_strings(layer: AgentFusionDataLayer) -> None:
    for meta, shown in (({1: "a"}, "int 1"), ({"ok": {2.5: "b"}}, "float 2.5"), ({None: 1}, "NoneType None")):
        with pytest.raises(InvalidInputError, match=f"metadata keys must be strings, got {shown}"):
            await layer.memory.add(user_id="u1", memory_key="m", content="x", metadata=meta)
    stored = await layer.memory.add(user_id="u1", memory_key="m", content="x", metadata={"1": "a"})
    assert stored.metadata == {"1": "a"}


# -- the server token ---------------------------------------------------------------------------------


@pytest.mark.parametrize("token", [" ", "\t\n", " secret", "secret "])
def test_a_blank_or_padded_server_token_is_refused(token: str) -> None:
    with pytest.raises(SettingsError, match="MEMORY_SERVER_TOKEN"):
        load_settings(memory_server_token=token)
    assert load_settings(memory_server_token="").memory_server_token == ""  # empty: loopback only
    assert load_settings(memory_server_token="s3cret").memory_server_token == "s3cret"


# -- a recall out of time says how to give it more ------------------------------------------------------


def test_a_recall_out_of_time_names_the_flag_and_the_setting(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    assert runner.invoke(app, ["demo", "--db", str(db)]).exit_code == 0
    args = ["recall", "MySQL 配置的端口", "--user", "demo-user", "--friend", "mentor", "--db", str(db)]
    short = runner.invoke(app, [*args, "--time-budget", "0.000001"])
    assert short.exit_code == 0, short.output
    assert "recall timed out" in short.output
    assert "--time-budget" in short.output and "MEMORY_RECALL_TIME_BUDGET_S" in short.output
    quiet = runner.invoke(app, [*args, "--time-budget", "0.000001", "--json"])
    assert "MEMORY_RECALL_TIME_BUDGET_S" in quiet.stderr and json.loads(quiet.stdout)["slots"] == []
    enough = runner.invoke(app, [*args, "--time-budget", "120", "--json"])
    assert json.loads(enough.stdout)["slots"][0].startswith("[memory:db-config-001:")
    assert "timed out" not in enough.stderr
    bad = runner.invoke(app, [*args, "--time-budget", "0"])
    assert bad.exit_code == 2 and "--time-budget must be more than 0" in bad.output


# -- the page's recall card lists what the block holds ---------------------------------------------------


async def test_the_recall_card_counts_the_memories_of_the_block(system: MemorySystem) -> None:
    """A gist and the turn it quotes come from the same messages: the block and the card list one."""
    from autogen_agentchat.agents import AssistantAgent

    from agent_memory.web._chat import ChatService
    from scripted import replay

    await system.layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory(
                "gist-1",
                "2026-01-02：用户说：“下周去北京出差”",
                memory_type="event",
                friend_id="f",
                metadata={"source_message_ids": [11, 12], "date": "2026-01-02"},
            ),
            NewMemory(
                "turn-1",
                "我：下周去北京出差",
                memory_type="conversation",
                friend_id="f",
                metadata={"source_message_ids": [11]},
            ),
            NewMemory(
                "hotel",
                "用户在北京出差时住在国贸附近",
                memory_type="event",
                friend_id="f",
                metadata={"source_message_ids": [30]},
            ),
        ],
    )
    context = system.context(user_id="u1", friend_id="f")
    await AssistantAgent("main", model_client=replay(["好的"]), model_context=context).run(task="北京出差的事")
    slots = [line for line in context.last_block.splitlines() if line.startswith("[memory:")]
    card = ChatService._recall_card(context)["result"]
    assert len(slots) == len(card["profiles"]) + len(card["events"]) == 2, (slots, card)
    assert not any(line.startswith("[memory:turn-1:") for line in slots)  # the gist before it holds its messages


# -- a busy port ---------------------------------------------------------------------------------------


def test_serve_on_a_busy_port_says_so_in_one_line(tmp_path: Path) -> None:
    import os
    import socket
    import subprocess
    import sys

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from agent_memory.cli import app; app()",
                "serve",
                "--port",
                str(port),
                "--db",
                str(tmp_path / "web.db"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            cwd=tmp_path,
        )
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines and f"port {port} on 127.0.0.1 is in use" in lines[0] and "--port N" in lines[0], done.stderr
    assert "Errno" not in done.stderr and "Traceback" not in done.stderr
    assert len(lines) <= 2, done.stderr
