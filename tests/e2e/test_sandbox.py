"""Isolation of code runs: detection, the bwrap command line, and what happens where isolation is absent.

Tests that need a working bubblewrap call :func:`require_isolation`: under ``CI=true`` a machine that
cannot isolate is a failure (CI installs ``bubblewrap`` in ``.ci/run``); locally such tests are skipped
with the reason (``apt-get install bubblewrap``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent_memory.settings import load_settings
from agent_memory.slots import SANDBOX_UID, CommandExecutor, Isolation, Limits, detect_isolation, run_python
from agent_memory.slots._isolation import sandbox_argv, workdir_problem
from agent_memory.system import MemorySystem
from data_layer import AgentFusionDataLayer, Scope

ABSENT = "/nonexistent/bwrap"


def require_isolation() -> Isolation:
    """The machine's isolation; fails under CI=true and skips locally when it is not available."""
    isolation = detect_isolation()
    if not isolation.available:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"bubblewrap isolation is required under CI=true: {isolation.reason}", pytrace=False)
        pytest.skip(f"no sandbox on this machine ({isolation.reason}); apt-get install bubblewrap")
    return isolation


def work_folder(path: Path) -> Path:
    """A working folder the sandbox user may write (as root, code runs as uid 65534)."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(path, SANDBOX_UID, SANDBOX_UID)
    return path


# -- detection -------------------------------------------------------------------------------------


def test_a_missing_bwrap_is_no_isolation() -> None:
    isolation = detect_isolation(bwrap=ABSENT)
    assert not isolation.available and "bubblewrap not found" in isolation.reason
    assert isolation.describe().startswith("no isolation")


def test_a_bwrap_that_cannot_make_namespaces_is_no_isolation() -> None:
    # an installed program that fails the probe (a container that forbids namespaces looks like this)
    isolation = detect_isolation(bwrap="false", refresh=True)
    assert not isolation.available and "cannot create the sandbox" in isolation.reason


def test_this_machine_isolates() -> None:
    isolation = require_isolation()
    assert isolation.bwrap and isolation.bwrap.endswith("bwrap")
    assert isolation.privileged == (os.geteuid() == 0)
    assert detect_isolation() is isolation  # probed once per process


def test_the_command_line_unshares_everything(tmp_path: Path) -> None:
    isolation = Isolation("bwrap", "test", "/usr/bin/bwrap", privileged=True)
    argv = sandbox_argv(
        isolation,
        ["python3", "-c", "pass"],
        workdir=tmp_path / "w",
        io_dir=tmp_path / "io",
        env={"PATH": "/usr/bin"},
        processes=12,
        tmp_mb=5,
    )
    for flag in ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent", "--clearenv", "--new-session"):
        assert flag in argv
    assert argv[argv.index("--proc") + 1] == "/proc" and "/usr/bin/prlimit" in argv and "--nproc=12:12" in argv
    assert f"--reuid={SANDBOX_UID}" in argv and "--no-new-privs" in argv
    assert ["--bind", str(tmp_path / "w"), str(tmp_path / "w")] == argv[argv.index(str(tmp_path / "w")) - 1 :][:3]
    assert "/etc" not in [argv[i + 1] for i, a in enumerate(argv) if a in ("--ro-bind", "--bind")]
    user = sandbox_argv(
        Isolation("bwrap", "t", "bwrap"), ["true"], workdir=tmp_path, io_dir=tmp_path, env={}, processes=8, tmp_mb=1
    )
    assert "--unshare-user" in user and "--disable-userns" in user and "/usr/bin/setpriv" not in user


def test_a_workdir_the_sandbox_user_cannot_write_is_named(tmp_path: Path) -> None:
    root = Isolation("bwrap", "t", "bwrap", privileged=True)
    (tmp_path / "closed").mkdir(mode=0o700)
    if os.geteuid() == 0:
        os.chown(tmp_path / "closed", 0, 0)
        assert "not writable by the sandbox user" in (workdir_problem(root, tmp_path / "closed") or "")
    assert workdir_problem(root, work_folder(tmp_path / "open")) is None
    assert "does not exist" in (workdir_problem(root, tmp_path / "nope") or "")


# -- where isolation is absent ----------------------------------------------------------------------


async def test_without_isolation_remembered_code_does_not_run(layer: AgentFusionDataLayer, tmp_path: Path) -> None:
    await layer.memory.add(
        user_id="u1",
        memory_key="cmd-001",
        content="echo hi > ran.txt",
        memory_type="command_output",
        metadata={"language": "shell"},
    )
    before = await layer.memory.count(user_id="u1")
    executor = CommandExecutor(layer, scope=Scope.of("u1"), workdir=tmp_path, isolation=detect_isolation(bwrap=ABSENT))
    for result in (
        await executor.execute_command_references("[memory:cmd-001]"),
        await executor.execute_with_memory_env("open('ran.txt', 'w').write('x')", {}),
    ):
        assert not result.success and result.memory_key is None
        assert "cannot isolate code runs" in (result.error or "")
        assert "MEMORY_EXEC_ALLOW_UNISOLATED=true" in (result.error or "")
        assert "apt-get install bubblewrap" in (result.error or "")
    assert not (tmp_path / "ran.txt").exists()
    assert await layer.memory.count(user_id="u1") == before


async def test_the_operator_can_opt_in_to_unisolated_runs(db_url: str, tmp_path: Path) -> None:
    settings = load_settings(memory_database_url=db_url, memory_exec_bwrap=ABSENT)
    async with MemorySystem.from_settings(settings) as system:
        refused = await system.executor(user_id="u1").execute_with_memory_env("_result = 1", {})
        assert not refused.success and "MEMORY_EXEC_ALLOW_UNISOLATED" in (refused.error or "")
    opted = load_settings(memory_database_url=db_url, memory_exec_bwrap=ABSENT, memory_exec_allow_unisolated=True)
    async with MemorySystem.from_settings(opted) as system:
        ran = await system.executor(user_id="u1").execute_with_memory_env("import os\n_result = os.getuid()", {})
        assert ran.success and ran.result == os.getuid()  # the same OS user: that is what the opt-in accepts
        saved = await system.layer.memory.retrieve_memory(memory_key=ran.memory_key or "", user_id="u1")
        assert saved is not None and saved.metadata["isolated"] is False


async def test_isolated_runs_are_recorded_as_such(system: MemorySystem) -> None:
    require_isolation()
    result = await system.executor(user_id="u1").execute_with_memory_env("import os\n_result = os.getuid()", {})
    assert result.success and result.result == SANDBOX_UID
    saved = await system.layer.memory.retrieve_memory(memory_key=result.memory_key or "", user_id="u1")
    assert saved is not None and saved.metadata["isolated"] is True
    assert json.loads(saved.content)["result"] == SANDBOX_UID


async def test_output_streams_while_the_code_runs(tmp_path: Path) -> None:
    isolation = require_isolation()
    pieces: list[str] = []
    code = "import time\nfor i in range(3):\n    print('step', i)\n    time.sleep(0.25)\n_output = 'done'"
    outcome = await run_python(code, isolation=isolation, on_output=pieces.append, limits=Limits(timeout_s=5))
    assert outcome.ok and outcome.isolated and outcome.output == "step 0\nstep 1\nstep 2\ndone"
    assert len(pieces) >= 2 and "".join(pieces) == "step 0\nstep 1\nstep 2\n"


async def test_the_sandbox_sees_python_but_not_the_host(tmp_path: Path) -> None:
    isolation = require_isolation()
    code = (
        "import os, json, sys\n"
        "_result = {'uid': os.getuid(), 'pid': os.getpid(), 'root': sorted(os.listdir('/')),"
        " 'procs': sorted(p for p in os.listdir('/proc') if p.isdigit()), 'env': sorted(os.environ),"
        " 'home_exists': os.path.exists('/root/.bashrc'), 'etc': sorted(os.listdir('/etc'))}"
    )
    outcome = await run_python(code, isolation=isolation)
    seen = outcome.result
    assert outcome.ok, outcome.error
    assert seen["uid"] == SANDBOX_UID and seen["pid"] < 10 and len(seen["procs"]) <= 3
    assert not seen["home_exists"] and "shadow" not in seen["etc"] and "postgresql" not in seen["etc"]
    assert not any("DATABASE" in n or n.startswith(("PG", "MEMORY_")) for n in seen["env"])
