"""The ``agent-memory`` command: db, memory, messages import, demo, bench ingest (SQLite files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_memory.cli import app

runner = CliRunner()


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"
    result = runner.invoke(app, ["db", "upgrade", "--url", url])
    assert result.exit_code == 0, result.output
    return url


def test_db_current_and_downgrade(url: str) -> None:
    out = runner.invoke(app, ["db", "current", "--url", url])
    assert out.exit_code == 0 and "up to date" in out.output
    out = runner.invoke(app, ["db", "downgrade", "base", "--url", url, "--yes"])
    assert out.exit_code == 0 and "base" in out.output
    out = runner.invoke(app, ["db", "current", "--url", url])
    assert "current: none" in out.output and "agent-memory db upgrade" in out.output


def test_memory_add_get_list_delete(url: str) -> None:
    add = runner.invoke(
        app,
        [
            "memory",
            "add",
            "db-config-001",
            '{"host": "localhost"}',
            "--user",
            "u1",
            "--summary",
            "MySQL 配置",
            "--type",
            "command_output",
            "--friend",
            "mentor",
            "--tag",
            "mysql",
            "--url",
            url,
        ],
    )
    assert add.exit_code == 0, add.output
    got = runner.invoke(app, ["memory", "get", "db-config-001", "--user", "u1", "--json", "--url", url])
    assert got.exit_code == 0, got.output
    data = json.loads(got.output)
    assert data["summary"] == "MySQL 配置" and data["friend_id"] == "mentor"
    assert "mysql" in data["keywords"] and "命令" in data["keywords"]  # the user's tag plus extracted ones
    other = runner.invoke(app, ["memory", "get", "db-config-001", "--user", "u2", "--url", url])
    assert other.exit_code == 1 and "has no memory" in other.output and "memory list --user u2" in other.output
    listed = runner.invoke(app, ["memory", "list", "--user", "u1", "--url", url])
    assert "db-config-001" in listed.output
    dup = runner.invoke(app, ["memory", "add", "db-config-001", "x", "--user", "u1", "--url", url])
    assert dup.exit_code == 2 and "--replace" in dup.output  # the command line's own way, not a Python name
    rep = runner.invoke(app, ["memory", "add", "db-config-001", "new", "--user", "u1", "--replace", "--url", url])
    assert rep.exit_code == 0 and "replaced" in rep.output
    gone = runner.invoke(app, ["memory", "delete", "db-config-001", "--user", "u1", "--url", url])
    assert gone.exit_code == 0
    assert runner.invoke(app, ["memory", "get", "db-config-001", "--user", "u1", "--url", url]).exit_code == 1
    again = runner.invoke(app, ["memory", "add", "db-config-001", "x", "--user", "u1", "--url", url])
    assert again.exit_code == 2 and "inactive: deleted or superseded" in again.output


def test_an_event_needs_a_friend_or_shared_on_the_command_line(url: str) -> None:
    lone = runner.invoke(app, ["memory", "add", "ev1", "下周体检", "--type", "event", "--user", "u1", "--url", url])
    assert lone.exit_code == 2 and "--shared" in lone.output
    shared = runner.invoke(
        app, ["memory", "add", "ev1", "下周体检", "--type", "event", "--shared", "--user", "u1", "--url", url]
    )
    assert shared.exit_code == 0, shared.output
    got = json.loads(runner.invoke(app, ["memory", "get", "ev1", "--user", "u1", "--json", "--url", url]).output)
    assert got["memory_type"] == "event" and got["friend_id"] is None
    both = runner.invoke(
        app, ["memory", "add", "ev2", "x", "--type", "event", "--shared", "--friend", "f", "--user", "u1", "--url", url]
    )
    assert both.exit_code == 2 and "drop one of the two" in both.output


def test_memory_add_bad_type_is_a_clear_error(url: str) -> None:
    out = runner.invoke(app, ["memory", "add", "k", "x", "--user", "u1", "--type", "nonsense", "--url", url])
    assert out.exit_code == 2
    assert "unknown memory_type 'nonsense'" in out.output
    assert "Traceback" not in out.output


def test_messages_import(url: str, tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    lines = [
        {
            "user_id": "u1",
            "role": "user",
            "content": f"消息 {i}",
            "friend_id": "A",
            "created_at": f"2025-01-01T10:{i:02d}:00+00:00",
        }
        for i in range(30)
    ]
    good.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    out = runner.invoke(app, ["messages", "import", str(good), "--url", url])
    assert out.exit_code == 0, out.output
    assert "imported 30 messages for 1 user(s)" in out.output


def test_messages_import_bad_line_imports_nothing(url: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"user_id": "u1", "role": "user", "content": "ok"}\n{"user_id": "u1", "role": "robot", "content": "x"}\n',
        encoding="utf-8",
    )
    out = runner.invoke(app, ["messages", "import", str(bad), "--url", url])
    assert out.exit_code == 2
    assert "line 2" in out.output and "robot" in out.output
    ok = tmp_path / "ok.jsonl"
    ok.write_text('{"user_id": "u1", "role": "user", "content": "only"}\n', encoding="utf-8")
    assert runner.invoke(app, ["messages", "import", str(ok), "--url", url]).exit_code == 0
    # Had the first good line of bad.jsonl been imported, u1 would have 2 messages now.
    import asyncio

    from data_layer import AgentFusionDataLayer

    async def count() -> int:
        async with AgentFusionDataLayer(url) as layer:
            return await layer.messages.count(user_id="u1")

    assert asyncio.run(count()) == 1


def test_demo_runs_offline_and_shows_isolation(tmp_path: Path) -> None:
    out = runner.invoke(app, ["demo", "--db", str(tmp_path / "demo.db")])
    assert out.exit_code == 0, out.output
    assert "loaded 10 memories and 8 messages" in out.output
    assert "another user sees 0 of these memories" in out.output
    assert "created a new database" not in out.output  # the demo makes (and fills) its file on purpose
    # The mentor's table must not list the companion's private events.
    mentor_part = out.output.split("what mentor")[1].split("latest messages")[0]
    assert "profile-job" in mentor_part and "event-report-pressure" in mentor_part
    assert "event-breakup" not in mentor_part and "分手" not in mentor_part


@pytest.mark.parametrize("corpus", ["varied", "templated"])
def test_bench_ingest_prints_one_json_object(corpus: str) -> None:
    out = runner.invoke(
        app, ["bench", "ingest", "--memories", "300", "--rounds", "2", "--backend", "sqlite", "--corpus", corpus]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    figures = data["results"]["sqlite"]
    assert data["corpus"] == figures["corpus"] == corpus
    assert figures["memories"] == 300 and figures["keyword_extraction"] is True
    assert figures["rows_per_s"] > 0 and figures["fts5_rows_per_s"] > 0
    assert len(figures["round_rows_per_s"]) == len(figures["fts5_round_rows_per_s"]) == 2
    assert figures["ratio_to_fts5"] == pytest.approx(figures["rows_per_s"] / figures["fts5_rows_per_s"], abs=0.01)


def test_bench_ingest_refuses_an_unknown_corpus_in_one_line() -> None:
    out = runner.invoke(app, ["bench", "ingest", "--memories", "10", "--backend", "sqlite", "--corpus", "novels"])
    assert out.exit_code != 0
    assert "--corpus must be one of varied, templated" in out.output
    assert "Traceback" not in out.output


def test_demo_searches_within_each_friend(tmp_path: Path) -> None:
    out = runner.invoke(app, ["demo", "--db", str(tmp_path / "demo.db")])
    assert out.exit_code == 0, out.output
    lines = {
        line.split(" searches ")[0].strip() + line.split(" searches ")[1].split(":")[0]: line
        for line in out.output.replace("\n   ", "\n").splitlines()
        if " searches " in line
    }
    assert "event-report-pressure" in lines["mentor'汇报压力'"]
    assert "event-report-pressure" not in lines["xiaozhu'汇报压力'"]  # the mentor's event stays with it
    assert "db-config-001" in lines["mentor'MySQL 数据库配置'"]
    assert "profile-movies" in lines["xiaozhu'推荐一部电影'"]  # 电影 finds 科幻电影, a shared profile


def test_memory_search_and_keywords(url: str) -> None:
    for key, text, friend in (("a", "MySQL 数据库端口是 3306", "mentor"), ("b", "喜欢喝手冲咖啡", "xiaozhu")):
        out = runner.invoke(app, ["memory", "add", key, text, "--user", "u1", "--friend", friend, "--url", url])
        assert out.exit_code == 0, out.output
    out = runner.invoke(app, ["memory", "search", "数据库", "--user", "u1", "--json", "--url", url])
    assert out.exit_code == 0, out.output
    hits = json.loads(out.output)
    assert [h["memory_key"] for h in hits] == ["a"] and 0 < hits[0]["score"] <= 1
    out = runner.invoke(
        app, ["memory", "search", "数据库", "--user", "u1", "--friend", "xiaozhu", "--json", "--url", url]
    )
    assert json.loads(out.output) == []
    shown = runner.invoke(app, ["keywords", "show", "a", "--user", "u1", "--url", url])
    assert "mysql" in [k["keyword"] for k in json.loads(shown.output)]
    bad = runner.invoke(app, ["memory", "search", "数据库", "--user", "u1", "--limit", "0", "--url", url])
    assert bad.exit_code == 2 and "limit must be an integer from 1 to 100" in bad.output


def test_keywords_backfill_clears_the_flag(url: str) -> None:
    import asyncio

    from data_layer import AgentFusionDataLayer

    async def seed() -> None:
        async with AgentFusionDataLayer(url) as layer:  # no analyzer: written without keywords
            for i in range(5):
                await layer.memory.add(user_id=f"u{i % 2}", memory_key=f"m{i}", content=f"第{i}条 项目 周报 记录")

    async def pending() -> int:
        async with AgentFusionDataLayer(url) as layer:
            return sum([len(await layer.memory.pending_keyword_extraction(user_id=u)) for u in ("u0", "u1")])

    asyncio.run(seed())
    assert asyncio.run(pending()) == 5
    out = runner.invoke(app, ["keywords", "backfill", "--url", url])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output[out.output.index("{") :])
    assert data["memories_updated"] == 5 and data["users_still_pending"] == 0
    assert asyncio.run(pending()) == 0


def _generic_set(tmp_path: Path) -> Path:
    """A generic-format data set of two users: three queries of user u, each with one gold memory."""
    folder = tmp_path / "generic"
    folder.mkdir()
    docs = [
        ("d1", "u", "MySQL 数据库端口是 3306"),
        ("d2", "u", "喜欢喝手冲咖啡"),
        ("d3", "u", "The user runs a half marathon in May"),
        ("d4", "v", "MySQL is also here but for another user"),
        ("d5", "v", "今天加班到很晚"),
    ]
    (folder / "corpus.jsonl").write_text(
        "\n".join(
            json.dumps({"id": i, "user_id": u, "text": t, "created_at": "2024-05-01T10:00:00Z"}) for i, u, t in docs
        ),
        encoding="utf-8",
    )
    queries = [("q1", "u", "数据库端口"), ("q2", "u", "marathon"), ("q3", "u", "今天想喝杯咖啡")]
    (folder / "queries.jsonl").write_text(
        "\n".join(json.dumps({"id": i, "user_id": u, "text": t}) for i, u, t in queries), encoding="utf-8"
    )
    (folder / "qrels.tsv").write_text("q1\td1\t1\nq2\td3\t1\nq3\td2\t1\n", encoding="utf-8")
    return folder


def test_bench_recall_reports_what_the_recall_block_holds(tmp_path: Path) -> None:
    """Each message's block holds its gold memory; in the other user's memories, "今天想喝杯咖啡" shares only
    今天 with "今天加班到很晚", and the block there stays empty."""
    args = ["bench", "recall", "--dataset", "generic", "--data", str(_generic_set(tmp_path)), "--latency-memories", "0"]
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    block = json.loads(out.output)["recall_block"]
    assert block["threshold"] == 0.5 and block["with_gold"] == 1.0
    assert block["mean_size"] >= 1.0 and block["mean_other"] == 0.0
    assert block["stranger_nonempty"] == 0.0 and block["stranger_mean_size"] == 0.0


def test_bench_retrieval_generic_reports_ratio(tmp_path: Path) -> None:
    folder = _generic_set(tmp_path)
    out = runner.invoke(app, ["bench", "retrieval", "--dataset", "generic", "--data", str(folder)])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["dataset"] == "generic" and data["queries"] == 3
    assert data["recall@1"] == 1.0 and data["mrr"] == 1.0
    assert data["baseline"]["name"] == "bm25" and "recall@10" in data["ratio"]
    assert set(data["latency_ms"]) == {"p50", "p95"}
    assert data["word_neighbours"] is True  # as the library, with the packaged vectors installed
    args = ["bench", "retrieval", "--dataset", "generic", "--data", str(folder), "--no-word-neighbours"]
    assert json.loads(runner.invoke(app, args).output)["word_neighbours"] is False


def test_bench_retrieval_missing_data_is_a_clear_error(tmp_path: Path) -> None:
    out = runner.invoke(app, ["bench", "retrieval", "--dataset", "locomo", "--data", str(tmp_path / "nope.json")])
    assert out.exit_code == 2 and "see the README" in " ".join(out.output.split())


def test_bench_conflicts_reports_by_language_and_kind(tmp_path: Path) -> None:
    packaged = json.loads(runner.invoke(app, ["bench", "conflicts"]).output)
    assert packaged["cases"] == 120 and packaged["by_lang_kind"]["zh/move"]["cases"] == 3
    own = tmp_path / "mine.jsonl"
    case = {
        "id": "x-move",
        "lang": "en",
        "kind": "move",
        "topic": "residence",
        "subject": "",
        "messages": [
            {"role": "user", "content": "I live in Oslo.", "at": "2024-01-01T10:00:00+00:00"},
            {"role": "user", "content": "I moved to Bergen.", "at": "2024-05-01T10:00:00+00:00"},
        ],
        "expected": {"value": "lives in Bergen", "uncertain": False, "reason": "time_change"},
    }
    own.write_text(json.dumps(case) + "\n", encoding="utf-8")
    out = runner.invoke(app, ["bench", "conflicts", "--data", str(own)])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["by_lang_kind"] == {"en/move": {"cases": 1, "correct": 1, "accuracy": 1.0}}
    missing = runner.invoke(app, ["bench", "conflicts", "--data", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2 and "nope.jsonl" in missing.output


def test_demo_shows_a_recall_event_by_event(tmp_path: Path) -> None:
    out = runner.invoke(app, ["demo", "--db", str(tmp_path / "demo.db")])
    assert out.exit_code == 0, out.output
    recall_part = out.output.split("6. recall before a reply")[1]
    assert "→ search_memories" in recall_part and "← " in recall_part and "handoff" in recall_part
    assert "[memory:event-report-pressure:" in recall_part
    assert "event-breakup" not in recall_part  # the companion's event never reaches the mentor


def test_recall_command_json(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    assert runner.invoke(app, ["demo", "--db", str(db)]).exit_code == 0
    url = f"sqlite+aiosqlite:///{db}"
    out = runner.invoke(
        app, ["recall", "MySQL 配置的端口", "--user", "demo-user", "--friend", "mentor", "--json", "--url", url]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["handoff"]["relevant_memory_keys"][0] == "db-config-001"
    assert data["slots"][0].startswith("[memory:db-config-001:")
    none = runner.invoke(app, ["recall", "完全无关的话题 xyzzy", "--user", "nobody", "--json", "--url", url])
    assert json.loads(none.output)["slots"] == []


def test_bench_archive_saves_most_tokens() -> None:
    out = runner.invoke(app, ["bench", "archive", "--rounds", "4", "--result-chars", "20000", "--reload-round", "3"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    full, archived = data["full_tokens_per_round"], data["archive_tokens_per_round"]
    assert len(full) == len(archived) == 4 and full == sorted(full)  # everything accumulates
    assert archived[2] > archived[1] and archived[3] < archived[2]  # the reload shows in its round only
    assert data["tokens_saved"] == round(1 - sum(archived) / sum(full), 4) and data["tokens_saved"] > 0.5
