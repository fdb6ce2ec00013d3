"""``MEMORY_ARCHIVE_MODEL_CLIENT``: a model turns ended sessions into memories through the composition
root (the web chat, the CLI and the MCP server all build it from the settings), on both backends; an
answer that is no usable JSON falls back to the offline rules with a WARNING that says why."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_memory.cli import app
from agent_memory.formation import ModelExtractor
from agent_memory.settings import SettingsError, load_settings
from agent_memory.system import MemorySystem
from data_layer import NewMessage
from scripted import replay

T0 = datetime(2026, 1, 2, 20, 0, tzinfo=UTC)
CHAT = [("user", "我在腾讯做产品经理，下周要去北京出差"), ("assistant", "出差顺利！"), ("user", "我喜欢科幻电影")]


async def _store_chat(db_url: str) -> list[int]:
    async with MemorySystem.from_settings(load_settings(memory_database_url=db_url)) as plain:
        await plain.ensure_schema()
        stored = await plain.layer.messages.append_many(
            user_id="u1",
            messages=[
                NewMessage(role=r, content=c, friend_id="xiaozhu", created_at=T0 + timedelta(minutes=i))
                for i, (r, c) in enumerate(CHAT)
            ],
        )
    return [m.id for m in stored]


def _spec(*answers: str) -> str:
    return replay(list(answers)).dump_component().model_dump_json()


async def test_a_model_from_the_settings_archives_the_session(db_url: str) -> None:
    ids = await _store_chat(db_url)
    answer = {
        "profiles": [
            {"topic": "occupation", "value": "模型记下：产品经理", "single_valued": True, "message_id": ids[0]}
        ],
        "events": [{"content": "模型记下：下周去北京出差", "source_message_ids": [ids[0]]}],
    }
    settings = load_settings(
        memory_database_url=db_url, memory_archive_model_client=_spec(json.dumps(answer, ensure_ascii=False))
    )
    async with MemorySystem.from_settings(settings) as system:
        assert isinstance(system.session_archiver.extractor, ModelExtractor)
        report = await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
        events = await system.layer.memory.list_memories(user_id="u1", friend_id="xiaozhu", memory_types=["event"])
        everything = await system.layer.memory.list_memories(user_id="u1", limit=50)
    assert report.sessions == 1 and report.gists == 1 and report.profiles == 1
    assert [m.content for m in events.items] == ["模型记下：下周去北京出差"]
    assert any("模型记下：产品经理" in m.content for m in everything.items)
    # the offline rules would have written neither wording (and a profile for 科幻电影 too)
    assert not any("科幻" in m.content for m in everything.items if m.memory_type != "conversation")


async def test_bad_json_falls_back_to_the_rules_with_a_warning(db_url: str, caplog: pytest.LogCaptureFixture) -> None:
    await _store_chat(db_url)
    settings = load_settings(memory_database_url=db_url, memory_archive_model_client=_spec("好的，这是记忆：{profiles"))
    with caplog.at_level(logging.WARNING, logger="agent_memory.formation"):
        async with MemorySystem.from_settings(settings) as system:
            report = await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "archiving model" in r.getMessage()]
    assert len(warnings) == 1
    line = warnings[0].getMessage()
    assert "unusable" in line and "JSONDecodeError" in line and "offline rules" in line
    assert "产品经理" not in line  # no chat text in the log
    # the rules archived the session: one gist per episode (the work trip, the films) and its profile items
    assert report.gists == 2 and report.profiles >= 1


def test_the_cli_archives_with_the_model_of_the_settings(
    db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    chat = tmp_path / "chat.jsonl"
    lines = [
        json.dumps({"role": r, "content": c, "created_at": (T0 + timedelta(minutes=i)).isoformat()}, ensure_ascii=False)
        for i, (r, c) in enumerate(CHAT)
    ]
    chat.write_text("\n".join(lines), encoding="utf-8")
    runner = CliRunner()
    imported = runner.invoke(
        app, ["messages", "import", str(chat), "--user", "u1", "--friend", "xiaozhu", "--url", db_url]
    )
    assert imported.exit_code == 0, imported.output
    with caplog.at_level(logging.WARNING, logger="agent_memory.formation"):
        archived = runner.invoke(
            app,
            ["archive", "run", "--user", "u1", "--json", "--url", db_url],
            env={"MEMORY_ARCHIVE_MODEL_CLIENT": _spec("not json")},
        )
    assert archived.exit_code == 0, archived.output
    assert json.loads(archived.output)["gists"] == 2  # the work trip and the films: two episodes
    assert any("archiving model" in r.getMessage() for r in caplog.records)  # the CLI asked the model


def test_a_bad_archive_model_setting_names_the_variable() -> None:
    with pytest.raises(SettingsError, match="MEMORY_ARCHIVE_MODEL_CLIENT"):
        load_settings(memory_archive_model_client="{not json").archive_model_client()
    assert load_settings().archive_model_client() is None
