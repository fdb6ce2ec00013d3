"""Hostile code against ``CommandExecutor``, each on both backends, through the real executor.

Each test runs hostile code the way remembered code runs (``execute_with_memory_env``) and checks
that it got nothing. Every one of them succeeded against the old runner (a subprocess with rlimits as
the same OS user): run this file with ``MEMEXEC_ATTACKS_UNISOLATED=1`` to point the attacks at that
runner (isolation absent, the operator's opt-in on) and watch them fail. The attacks are bounded so
that even unisolated they end within seconds.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from agent_memory.slots import CommandExecutor, CommandResult, Isolation, Limits
from data_layer import AgentFusionDataLayer, Scope
from test_sandbox import require_isolation, work_folder

SECRET = "u2-secret-" + uuid.uuid4().hex[:8]
UNISOLATED = os.environ.get("MEMEXEC_ATTACKS_UNISOLATED") == "1"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
async def attack(layer: AgentFusionDataLayer, db_url: str, tmp_path: Path) -> dict[str, Any]:
    """An executor for user u1, a secret of user u2 in the database, and what the attacks need."""
    isolation = Isolation("none", "forced by MEMEXEC_ATTACKS_UNISOLATED") if UNISOLATED else require_isolation()
    await layer.memory.add(user_id="u2", memory_key="diary", content=f"{SECRET} my bank pin", friend_id="other")
    await layer.memory.add(user_id="u1", memory_key="note", content="harmless")
    url = make_url(db_url)
    executor = CommandExecutor(
        layer,
        scope=Scope.of("u1", "mentor"),
        isolation=isolation,
        allow_unisolated=UNISOLATED,
        limits=Limits(timeout_s=5, cpu_s=3, memory_mb=512, processes=16),
        workdir=work_folder(tmp_path / "work"),
    )
    return {
        "executor": executor,
        "work": tmp_path / "work",
        "db_path": str(url.database) if url.drivername.startswith("sqlite") else None,
        "pg_url": url.set(drivername="postgresql").render_as_string(hide_password=False)
        if url.drivername.startswith("postgresql")
        else "postgresql://postgres@127.0.0.1:5432/postgres",
    }


async def _run(executor: CommandExecutor, code: str, **values: Any) -> CommandResult:
    header = "".join(f"{name} = {value!r}\n" for name, value in values.items())
    result = await executor.execute_with_memory_env(header + code, {})
    assert result.success, result.error  # the attack code itself ran; it must have found nothing
    return result


async def test_the_database_file_cannot_be_read(attack: dict[str, Any]) -> None:
    code = """
import glob, os
hits = []
for pid in {os.getppid(), HOST_PID}:
    for fd in glob.glob(f'/proc/{pid}/fd/*'):
        try:
            with open(fd, 'rb') as fh:
                if SECRET.encode() in fh.read(50_000_000):
                    hits.append(fd)
        except OSError:
            pass
for path in filter(None, [DB_PATH, DB_PATH and DB_PATH + '-wal']):
    try:
        with open(path, 'rb') as fh:
            if SECRET.encode() in fh.read():
                hits.append(path)
    except OSError:
        pass
_result = hits
"""
    result = await _run(attack["executor"], code, HOST_PID=os.getpid(), SECRET=SECRET, DB_PATH=attack["db_path"])
    assert result.result == []


async def test_postgresql_and_the_network_are_out_of_reach(attack: dict[str, Any]) -> None:
    code = """
import socket
reached = []
for family, addr in [(socket.AF_INET, ('127.0.0.1', 5432)), (socket.AF_INET6, ('::1', 5432))]:
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            s.connect(addr)
            reached.append(str(addr))
    except OSError:
        pass
for path in ['/var/run/postgresql/.s.PGSQL.5432', '/run/postgresql/.s.PGSQL.5432', '/tmp/.s.PGSQL.5432']:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(path)
            reached.append(path)
    except OSError:
        pass
try:
    import psycopg
    with psycopg.connect(PG_URL, connect_timeout=3) as conn:
        rows = conn.execute("SELECT content FROM agent_memories WHERE user_id = 'u2'").fetchall()
        reached.append(str(rows))
except Exception:
    pass
_result = reached
"""
    result = await _run(attack["executor"], code, PG_URL=attack["pg_url"])
    assert result.result == []
    assert SECRET not in result.output


async def test_the_parents_environment_and_memory_are_hidden(attack: dict[str, Any]) -> None:
    code = """
import os
leaks = []
for pid in sorted({os.getppid(), HOST_PID}):
    try:
        with open(f'/proc/{pid}/environ', 'rb') as fh:
            names = [v.split(b'=')[0].decode() for v in fh.read().split(b'\\0') if v]
        leaks += [f'{pid} environ {n}' for n in names if n not in ALLOWED]
    except OSError:
        pass
    try:
        with open(f'/proc/{pid}/maps') as maps, open(f'/proc/{pid}/mem', 'rb') as mem:
            start = int(next(line for line in maps if ' r' in line).split('-')[0], 16)
            mem.seek(start)
            if mem.read(16):
                leaks.append(f'{pid} mem')
    except (OSError, StopIteration, ValueError):
        pass
_result = leaks
"""
    allowed = ["PATH", "HOME", "LANG", "LC_ALL", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED"]
    result = await _run(attack["executor"], code, HOST_PID=os.getpid(), ALLOWED=allowed)
    assert result.result == []


async def test_the_parent_cannot_be_signalled(attack: dict[str, Any]) -> None:
    # signal 0 asks "may I signal it?" without sending anything: the test process is never hurt
    code = """
import os
allowed = []
for pid in sorted({os.getppid(), HOST_PID}):
    try:
        os.kill(pid, 0)
        allowed.append(pid)
    except OSError:
        pass
_result = allowed
"""
    result = await _run(attack["executor"], code, HOST_PID=os.getpid())
    assert result.result == []


async def test_forking_is_capped(attack: dict[str, Any]) -> None:
    # bounded: at most 200 children, each gone after 2 s, so even an unisolated run ends
    code = """
import os, time
started = 0
for _ in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    started += 1
_result = started
"""
    result = await _run(attack["executor"], code)
    assert result.result < 16  # MEMORY_EXEC_MAX_PROCESSES of this executor


async def test_setsid_children_and_daemons_die_with_the_run(attack: dict[str, Any]) -> None:
    code = """
import os, subprocess, time
subprocess.Popen(['sh', '-c', f'sleep 1; echo escaped > {WORK}/setsid.marker'], start_new_session=True)
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(1)
        with open(f'{WORK}/daemon.marker', 'w') as fh:
            fh.write('alive')
    os._exit(0)
os.waitpid(pid, 0)
_result = 'launched'
"""
    result = await _run(attack["executor"], code, WORK=str(attack["work"]))
    assert result.result == "launched" and result.duration_ms < 1_000
    await asyncio.sleep(2)
    assert sorted(p.name for p in attack["work"].glob("*.marker")) == []


async def test_nothing_outside_the_working_folder_can_be_written(attack: dict[str, Any], tmp_path: Path) -> None:
    name = f"memexec-escape-{uuid.uuid4().hex[:8]}"
    targets = [f"/etc/{name}", str(REPO / name), str(tmp_path / name), f"/tmp/{name}", f"/usr/{name}"]
    code = """
import os
written = []
for path in TARGETS:
    try:
        with open(path, 'w') as fh:
            fh.write('x')
        written.append(path)
    except OSError:
        pass
with open('inside.txt', 'w') as fh:
    fh.write('ok')
_result = written
"""
    try:
        result = await _run(attack["executor"], code, TARGETS=targets)
        # /tmp inside is the sandbox's own tmpfs: a write there may succeed but never reaches the host
        assert [p for p in result.result if not p.startswith("/tmp/")] == []
        assert _existing(targets) == []
        assert _existing([str(attack["work"] / "inside.txt")]) != []  # the working folder is writable
    finally:
        for target in _existing(targets):
            os.unlink(target)


def _existing(paths: list[str]) -> list[str]:
    return [p for p in paths if os.path.exists(p)]
