"""CLI errors: one or two lines on stderr that name the cause and say what to do, exit code 2, and
the traceback only with ``agent-memory --debug``. Data commands migrate a new SQLite file first."""

from __future__ import annotations

import json
import logging
import os
import uuid
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from agent_memory.cli import app

runner = CliRunner()


def _sqlite(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


def _short_error(result, *causes: str) -> str:
    """The stderr of a failed command, checked: exit code 2, at most 2 lines, no traceback, names each cause."""
    err = result.stderr
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = err.strip().splitlines()
    assert 1 <= len(lines) <= 2, err
    assert lines[0].startswith("error: "), err
    assert "Traceback" not in result.output
    for cause in causes:
        assert cause in err, err
    return err


# -- a new SQLite path ----------------------------------------------------------------------------------


def test_memory_add_on_a_brand_new_path_migrates_it(tmp_path: Path) -> None:
    url = _sqlite(tmp_path / "new" / "folder" / "memory.db")  # neither the folder nor the file exists
    add = runner.invoke(app, ["memory", "add", "k1", "喜欢喝手冲咖啡", "--user", "u1", "--url", url])
    assert add.exit_code == 0, add.output
    got = runner.invoke(app, ["memory", "get", "k1", "--user", "u1", "--json", "--url", url])
    assert got.exit_code == 0, got.output
    assert json.loads(got.output)["content"] == "喜欢喝手冲咖啡"
    current = runner.invoke(app, ["db", "current", "--url", url])
    assert "up to date" in current.output


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["memory", "list", "--user", "u1"], 0),
        (["memory", "search", "咖啡", "--user", "u1"], 0),
        (["memory", "delete", "k", "--user", "u1"], 1),  # no such memory
        (["keywords", "backfill"], 0),
        (["keywords", "show", "k", "--user", "u1"], 2),  # no such memory: an error, but not a missing table
        (["recall", "你好", "--user", "u1", "--json"], 0),
    ],
)
def test_every_data_command_migrates_a_new_file(tmp_path: Path, args: list[str], code: int) -> None:
    url = _sqlite(tmp_path / "fresh.db")
    out = runner.invoke(app, [*args, "--url", url])
    assert out.exit_code == code, out.output
    assert "no such table" not in out.output and "Traceback" not in out.output
    assert "up to date" in runner.invoke(app, ["db", "current", "--url", url]).output


def test_a_new_file_is_announced_so_a_mistyped_path_is_seen(tmp_path: Path) -> None:
    """A typo in --db made a new, empty database and showed "no memories": now a note on stderr says a
    new file was made (once: the next command on it says nothing), and stdout stays the command's own."""
    path = tmp_path / "memroy.db"
    first = runner.invoke(app, ["memory", "list", "--user", "u1", "--json", "--db", str(path)])
    assert first.exit_code == 0 and f"created a new database at {path}" in first.stderr
    assert json.loads(first.stdout) is not None  # the JSON is untouched
    again = runner.invoke(app, ["memory", "list", "--user", "u1", "--db", str(path)])
    assert again.exit_code == 0 and "created a new" not in again.stderr


def test_db_current_only_reads_and_a_file_without_tables_is_new_too(tmp_path: Path) -> None:
    """``db current`` on a mistyped path made the file, and the next command then took it for an
    existing database and said nothing: it now only reads, and a file without tables is announced."""
    path = tmp_path / "never.db"
    current = runner.invoke(app, ["db", "current", "--db", str(path)])
    assert current.exit_code == 0 and "current: none" in current.output and "no database file" in current.output
    assert not path.exists()
    path.touch()  # left by another tool: no tables
    first = runner.invoke(app, ["memory", "list", "--user", "u1", "--db", str(path)])
    assert first.exit_code == 0 and f"created a new database at {path}" in first.stderr
    assert "up to date" in runner.invoke(app, ["db", "current", "--db", str(path)]).output


def test_another_applications_sqlite_file_is_not_announced_as_new(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "theirs.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    out = runner.invoke(app, ["memory", "list", "--user", "u1", "--db", str(path)])
    assert out.exit_code == 0 and "created a new database" not in out.stderr


def test_output_the_terminal_cannot_show_is_not_blamed_on_an_argument() -> None:
    from agent_memory.cli._errors import explain

    printing = UnicodeEncodeError("ascii", "记忆", 0, 1, "ordinal not in range(128)")
    message, hint = explain(printing)
    assert "terminal's encoding (ascii)" in message and "UTF-8" in (hint or "")
    argument = UnicodeEncodeError("utf-8", "\udcff", 0, 1, "surrogates not allowed")
    assert "holds bytes that are not UTF-8" in explain(argument)[0]


def test_a_folder_given_as_the_database_is_named_as_one(tmp_path: Path) -> None:
    for given in (str(tmp_path), _sqlite(tmp_path)):
        out = runner.invoke(app, ["memory", "list", "--user", "u1", "--db", given])
        err = _short_error(out, f"{tmp_path} is a folder, not a SQLite file")
        assert str(tmp_path / "memory.db") in err


def test_messages_import_on_a_new_path(tmp_path: Path) -> None:
    data = tmp_path / "m.jsonl"
    data.write_text('{"user_id": "u1", "role": "user", "content": "你好"}\n', encoding="utf-8")
    url = _sqlite(tmp_path / "sub" / "new.db")
    out = runner.invoke(app, ["messages", "import", str(data), "--url", url])
    assert out.exit_code == 0, out.output
    assert "imported 1 messages" in out.output


# -- errors ---------------------------------------------------------------------------------------------


def test_unreachable_server() -> None:
    url = "postgresql+psycopg://postgres@127.0.0.1:1/x"  # nothing listens on port 1
    out = runner.invoke(app, ["memory", "add", "k", "x", "--user", "u1", "--url", url])
    err = _short_error(out, "cannot reach the PostgreSQL server at 127.0.0.1:1")
    assert "start the server" in err


def test_unreachable_server_with_debug_shows_the_traceback() -> None:
    url = "postgresql+psycopg://postgres@127.0.0.1:1/x"
    out = runner.invoke(app, ["--debug", "memory", "add", "k", "x", "--user", "u1", "--url", url])
    assert out.exit_code == 2
    assert "Traceback" in out.stderr
    assert out.stderr.strip().splitlines()[-2].startswith("error: cannot reach the PostgreSQL server")


def test_unknown_database(pg_admin_url: str) -> None:
    name = f"afm_missing_{uuid.uuid4().hex[:10]}"
    url = make_url(pg_admin_url).set(database=name).render_as_string(hide_password=False)
    out = runner.invoke(app, ["memory", "list", "--user", "u1", "--url", url])
    err = _short_error(out, f'database "{name}" does not exist')
    assert f"createdb {name}" in err


def test_unknown_role(pg_admin_url: str) -> None:
    role = f"afm_nobody_{uuid.uuid4().hex[:8]}"
    url = make_url(pg_admin_url).set(username=role, password=None).render_as_string(hide_password=False)
    out = runner.invoke(app, ["memory", "list", "--user", "u1", "--url", url])
    _short_error(out, f'role (user) "{role}" does not exist')


def test_postgres_database_without_the_schema(fresh_pg_url: str) -> None:
    out = runner.invoke(app, ["memory", "list", "--user", "u1", "--url", fresh_pg_url])
    _short_error(out, "agent-memory db upgrade")


def _writable(path: Path) -> bool:
    try:
        (path / ".probe").touch()
    except OSError:
        return False
    (path / ".probe").unlink()
    return True


def test_read_only_directory_for_the_sqlite_file(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if _writable(locked):  # root ignores the mode: a regular file where a folder should be fails for root too
            blocker = tmp_path / "file.txt"
            blocker.write_text("not a folder", encoding="utf-8")
            target, cause = blocker / "memory.db", str(blocker)
        else:
            target, cause = locked / "memory.db", str(locked / "memory.db")
        out = runner.invoke(app, ["memory", "add", "k", "x", "--user", "u1", "--url", _sqlite(target)])
        err = _short_error(out, cause)
        assert "writable" in err
    finally:
        locked.chmod(0o700)


def test_bad_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_RECALL_ROUNDS", "9")
    out = runner.invoke(app, ["memory", "add", "k", "x", "--user", "u1", "--url", _sqlite(tmp_path / "m.db")])
    err = _short_error(out, "MEMORY_RECALL_ROUNDS", "allowed: 1 to 5")
    assert ".env" in err
    monkeypatch.setenv("MEMORY_SEARCH_KEYWORD_WEIGHT", "3")  # two bad variables: still two lines
    out = runner.invoke(app, ["memory", "list", "--user", "u1"])
    _short_error(out, "MEMORY_RECALL_ROUNDS", "MEMORY_SEARCH_KEYWORD_WEIGHT")


def test_a_misspelt_setting_is_named_not_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A typo in a setting's name ran as if it were not set; now it is named, with the setting meant: in
    .env (the user's own file) it stops the program; in the environment, which holds other programs'
    variables too, it is a warning. A container's MEMORY_LIMIT and the variables Kubernetes gives for a
    service named "memory" (MEMORY_SERVICE_HOST, close to MEMORY_SERVER_HOST) are left alone."""
    url = _sqlite(tmp_path / "m.db")
    monkeypatch.chdir(tmp_path)
    for name, value in (
        ("MEMORY_LIMIT", "4g"),
        ("MEMORY_SERVICE_HOST", "10.0.0.7"),
        ("MEMORY_SERVER_PORT", "8080"),
        ("MEMORY_PORT_8080_TCP_ADDR", "10.0.0.7"),
    ):
        monkeypatch.setenv(name, value)
    with caplog.at_level(logging.WARNING, logger="agent_memory.settings._settings"):
        assert runner.invoke(app, ["memory", "list", "--user", "u1", "--url", url]).exit_code == 0
        assert not caplog.records
        monkeypatch.setenv("MEMORY_RECAL_ROUNDS", "2")
        out = runner.invoke(app, ["memory", "list", "--user", "u1", "--url", url])
    assert out.exit_code == 0, out.output
    assert [r.getMessage() for r in caplog.records] == [
        "MEMORY_RECAL_ROUNDS (in the environment) is not a setting: did you mean MEMORY_RECALL_ROUNDS? (ignored)"
    ]
    monkeypatch.delenv("MEMORY_RECAL_ROUNDS")
    (tmp_path / ".env").write_text("MEMORY_SEARCH_KEYWORD_WEGHT=0.5\n", encoding="utf-8")
    out = runner.invoke(app, ["memory", "list", "--user", "u1", "--url", url])
    _short_error(out, "MEMORY_SEARCH_KEYWORD_WEGHT (in .env)", "did you mean MEMORY_SEARCH_KEYWORD_WEIGHT")


def test_unsupported_url() -> None:
    out = runner.invoke(app, ["memory", "list", "--user", "u1", "--url", "mysql://x/y"])
    _short_error(out, "unsupported database driver 'mysql'")


def test_bad_line_of_an_import_is_two_lines_at_most(tmp_path: Path) -> None:
    data = tmp_path / "m.jsonl"
    data.write_text('{"user_id": "u1", "role": "user", "content": "ok"}\n{"role": oops}\n', encoding="utf-8")
    out = runner.invoke(app, ["messages", "import", str(data), "--url", _sqlite(tmp_path / "m.db")])
    _short_error(out, "line 2", "not valid JSON")


def test_unknown_revision_is_explained(tmp_path: Path) -> None:
    out = runner.invoke(app, ["db", "upgrade", "no_such_rev", "--url", _sqlite(tmp_path / "m.db")])
    _short_error(out, "no_such_rev")


def test_empty_memory_content_is_refused(tmp_path: Path) -> None:
    url = _sqlite(tmp_path / "m.db")
    for content in ("", "   \n "):
        out = runner.invoke(app, ["memory", "add", "k", content, "--user", "u1", "--url", url])
        _short_error(out, "content is empty")
    assert runner.invoke(app, ["memory", "get", "k", "--user", "u1", "--url", url]).exit_code == 1


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_error_output_has_no_markup_applied(tmp_path: Path) -> None:
    # a message carrying rich markup is printed as it is
    out = runner.invoke(
        app, ["memory", "add", "k", "x", "--user", "u1", "--type", "[red]x[/red]", "--url", _sqlite(tmp_path / "m.db")]
    )
    _short_error(out, "[red]x[/red]")


@pytest.mark.parametrize("bench", ["retrieval", "recall"])
def test_a_bench_refuses_an_unknown_embedder(bench: str) -> None:
    folder = Path(__file__).parents[2] / "benchmarks" / "zh_allusion"
    out = runner.invoke(app, ["bench", bench, "--dataset", "generic", "--data", str(folder), "--embedder", "bert"])
    assert out.exit_code != 0
    assert "unknown embedder 'bert': use auto, hashing, wordvec-zh, use-m3, openai or minilm" in out.output
    assert "Traceback" not in out.output


def test_data_commands_take_a_sqlite_path_as_db(tmp_path: Path) -> None:
    """A newcomer's path works where a URL does (``--db`` and ``--url`` alike)."""
    path = tmp_path / "m.db"
    added = runner.invoke(app, ["memory", "add", "k1", "喜欢喝手冲咖啡", "--user", "u1", "--db", str(path)])
    assert added.exit_code == 0, added.output
    got = runner.invoke(app, ["memory", "get", "k1", "--user", "u1", "--json", "--url", str(path)])
    assert got.exit_code == 0 and json.loads(got.output)["content"] == "喜欢喝手冲咖啡"
    assert path.exists()


def test_newcomer_mistakes_are_named_with_what_to_do(tmp_path: Path) -> None:
    """A misspelt type found nothing as if there were no such memories; an empty message was recalled
    for as a greeting; a missing benchmark file got the database's hint."""
    url = _sqlite(tmp_path / "m.db")
    add = runner.invoke(
        app, ["memory", "add", "ev", "季度汇报", "--type", "event", "--friend", "f", "--user", "u1", "--url", url]
    )
    assert add.exit_code == 0, add.output
    typo = runner.invoke(app, ["memory", "search", "汇报", "--type", "evnt", "--user", "u1", "--url", url])
    _short_error(typo, "unknown memory_type 'evnt'", "event")
    found = runner.invoke(app, ["memory", "search", "汇报", "--type", "event", "--user", "u1", "--url", url])
    assert found.exit_code == 0 and "ev" in found.output
    for mode in ("memory", "evidence"):
        blank = runner.invoke(app, ["recall", "   ", "--user", "u1", "--mode", mode, "--url", url])
        _short_error(blank, "message is empty")
    missing = runner.invoke(app, ["bench", "retrieval", "--dataset", "locomo", "--data", str(tmp_path / "nope.json")])
    err = _short_error(missing, "nope.json", "check the path")
    assert "writable" not in err
