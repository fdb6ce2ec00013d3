"""From a chat file to memories and an evidence recall on the command line (SQLite and PostgreSQL):
``messages import`` -> ``archive run`` -> ``recall --mode evidence --json`` -> ``memory list``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agent_memory.cli import app

runner = CliRunner()

CHAT = [
    ("user", "我很喜欢吃辣，川菜湘菜都行", "2026-01-02T19:00:00+00:00"),
    ("assistant", "好的，记住你喜欢吃辣了", "2026-01-02T19:01:00+00:00"),
    ("user", "我在腾讯做产品经理", "2026-01-02T19:02:00+00:00"),
    ("assistant", "你之前说过你不吃辣对吧？", "2026-01-20T20:00:00+00:00"),
    ("user", "我现在不吃辣了，胃不太好", "2026-01-20T20:01:00+00:00"),
]


def test_import_archive_recall_and_list(db_url: str, tmp_path: Path) -> None:
    chat = tmp_path / "chat.jsonl"
    chat.write_text(
        "\n".join(json.dumps({"role": r, "content": c, "created_at": t}, ensure_ascii=False) for r, c, t in CHAT),
        encoding="utf-8",
    )
    imported = runner.invoke(
        app, ["messages", "import", str(chat), "--user", "u1", "--friend", "xiaozhu", "--url", db_url]
    )
    assert imported.exit_code == 0, imported.output
    archived = runner.invoke(app, ["archive", "run", "--user", "u1", "--json", "--url", db_url])
    assert archived.exit_code == 0, archived.output
    report = json.loads(archived.output)
    assert report["sessions"] == 2 and report["profiles"] >= 2 and report["superseded"] == 1

    args = ["recall", "我能吃辣吗？", "--user", "u1", "--friend", "xiaozhu", "--mode", "evidence", "--json"]
    recalled = runner.invoke(app, [*args, "--url", db_url])
    assert recalled.exit_code == 0, recalled.output
    out = json.loads(recalled.output)
    assert set(out) >= {"memory_view", "evidence", "limits"}
    assert set(out["memory_view"]) == {"preferences", "profile", "constraints"}
    constraints = [i["text"] for i in out["memory_view"]["constraints"]]
    assert constraints == ["不吃辣"]  # the newer explicit statement wins
    spicy = out["memory_view"]["constraints"][0]
    evidence = {e["message_id"]: e for e in out["evidence"]}
    assert {evidence[i]["content"] for i in spicy["evidence_ids"]} >= {
        "我现在不吃辣了，胃不太好",
        "我很喜欢吃辣，川菜湘菜都行",
    }
    assert any(c["reason"] in ("time_change", "assistant_paraphrase") for c in out["conflicts"])
    assert out["limits"]["messages_considered"] >= 2 and "time_range" in out["limits"]

    listed = runner.invoke(app, ["memory", "list", "--user", "u1", "--json", "--history", "--url", db_url])
    assert listed.exit_code == 0, listed.output
    items = json.loads(listed.output)["items"]
    kinds = {i["memory_type"] for i in items}
    assert {"profile", "event", "conversation"} <= kinds
    assert all(i["source_message_ids"] for i in items)  # every formed memory names its sources
    old = [i for i in items if not i["is_active"]]
    assert old and old[0]["metadata"]["superseded_by"] == "profile-diet-辣"
    table = runner.invoke(app, ["memory", "list", "--user", "u1", "--url", db_url])
    assert table.exit_code == 0 and "sources" in table.output
