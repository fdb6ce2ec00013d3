"""Run code or a shell command in a separate, limited process.

Why not AutoGen's ``LocalCommandLineCodeExecutor``: its timeout does not kill the process group (a
child that forks keeps it waiting), output is lost on time-out, and it has no hook to set CPU and
memory limits before the code starts. Here every run gets a new session (the whole process group is
killed on time-out), ``RLIMIT_AS`` / ``RLIMIT_CPU`` / ``RLIMIT_FSIZE`` set before ``exec``, a scrubbed
environment (no database URL or keys) and its own working folder.

It is not a sandbox for hostile code: the child runs as the same OS user, so it can read whatever that
user can (files, and the parent's start-up environment through ``/proc``), and a child that calls
``setsid`` leaves the process group. Use a container or a separate OS user for untrusted code.

>>> out = asyncio.run(run_python("print(memory['k']['port'])", memory={"k": {"port": 3306}}))  # doctest: +SKIP
>>> out.output  # doctest: +SKIP
'3306\\n'
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import signal
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The program the child Python runs: it reads the payload file, runs the code with ``exec_locals``
#: (memory, messages, _output, _result) and writes the outcome as JSON.
_RUNNER = r"""
import contextlib, io, json, sys, traceback
payload_path, result_path = sys.argv[1], sys.argv[2]
with open(payload_path, encoding="utf-8") as fh:
    payload = json.load(fh)
scope = {
    "__builtins__": __builtins__,
    "__name__": "__memory_exec__",
    "memory": payload["memory"],
    "memory_summary": payload["memory_summary"],
    "memory_meta": payload["memory_meta"],
    "messages": payload["messages"],
    "_output": "",
    "_result": None,
}
buffer = io.StringIO()
error = None
try:
    with contextlib.redirect_stdout(buffer):
        exec(compile(payload["code"], "<memory_exec>", "exec"), scope)
except MemoryError:
    error = "MemoryError: the code went over its memory limit"
except KeyError as exc:
    if exc.args and exc.args[0] not in scope["memory"] and isinstance(exc.args[0], str):
        given = sorted(scope["memory"])
        error = f"KeyError: {exc.args[0]!r} (memory slots given to this run: {given})"
    else:
        error = traceback.format_exc(limit=5)
except BaseException:
    error = traceback.format_exc(limit=5)
result = scope.get("_result", scope.get("result"))
try:
    json.dumps(result)
except (TypeError, ValueError):
    result = repr(result)
output = buffer.getvalue() + (scope["_output"] if isinstance(scope.get("_output"), str) else "")
with open(result_path, "w", encoding="utf-8") as fh:
    json.dump({"ok": error is None, "result": result, "output": output[-100000:], "error": error}, fh)
"""


@dataclass(frozen=True, slots=True)
class Limits:
    """Wall-clock seconds, CPU seconds, address space (MB) and largest file written (MB)."""

    timeout_s: float = 10.0
    cpu_s: int = 10
    memory_mb: int = 512
    file_mb: int = 50

    def __post_init__(self) -> None:
        if not 0 < self.timeout_s <= 3600 or not 1 <= self.cpu_s <= 3600:
            raise ValueError("timeout_s must be in (0, 3600] and cpu_s in 1-3600")
        if not 64 <= self.memory_mb <= 65536 or not 1 <= self.file_mb <= 10240:
            raise ValueError("memory_mb must be 64-65536 and file_mb 1-10240")


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What a run did. ``timed_out`` / ``killed`` explain a missing result."""

    ok: bool
    result: Any
    output: str
    error: str | None
    exit_code: int | None
    timed_out: bool
    duration_ms: float


def _limit(limits: Limits) -> Any:
    def apply() -> None:  # runs in the child between fork and exec
        memory = limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
        size = limits.file_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def _environment(workdir: Path) -> dict[str, str]:
    """A minimal environment: this Python first on PATH, UTF-8, nothing else of the parent's."""
    bindir = str(Path(sys.executable).parent)
    return {
        "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(workdir),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


async def _run(
    argv: Sequence[str], *, workdir: Path, scratch: Path, limits: Limits
) -> tuple[int | None, str, str, bool, float]:
    started = time.perf_counter()
    # output goes to files, not pipes: a background child that keeps a pipe open cannot hold the run
    with (scratch / "stdout.txt").open("wb") as out_fh, (scratch / "stderr.txt").open("wb") as err_fh:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=workdir,
            env=_environment(workdir),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out_fh,
            stderr=err_fh,
            start_new_session=True,  # its own process group: a time-out kills grandchildren too
            preexec_fn=_limit(limits),
        )
        timed_out = False
        try:
            await asyncio.wait_for(process.wait(), timeout=limits.timeout_s)
        except TimeoutError:
            timed_out = True
        finally:
            # always: a time-out, a cancelled caller, or children left running in the background
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            if process.returncode is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), timeout=5)
    duration = (time.perf_counter() - started) * 1000
    out = _tail(scratch / "stdout.txt", 100_000)
    err = _tail(scratch / "stderr.txt", 20_000)
    return process.returncode, out, err, timed_out, duration


def _tail(path: Path, limit: int) -> str:
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - limit * 4))
        return fh.read().decode("utf-8", "replace")[-limit:]


async def run_python(
    code: str,
    *,
    memory: Mapping[str, Any] | None = None,
    memory_summary: Mapping[str, str] | None = None,
    memory_meta: Mapping[str, Any] | None = None,
    messages: Sequence[str] = (),
    limits: Limits | None = None,
    workdir: str | Path | None = None,
) -> RunOutcome:
    """Run Python ``code`` with ``memory`` (and summaries, metadata, messages) as its variables."""
    chosen = limits or Limits()
    with tempfile.TemporaryDirectory(prefix="memexec-") as scratch:
        folder = Path(scratch)
        payload = folder / "payload.json"
        result_path = folder / "result.json"
        payload.write_text(
            json.dumps(
                {
                    "code": code,
                    "memory": dict(memory or {}),
                    "memory_summary": dict(memory_summary or {}),
                    "memory_meta": dict(memory_meta or {}),
                    "messages": list(messages),
                },
                ensure_ascii=False,
            ),
            encoding="utf-8",
        )
        cwd = Path(workdir) if workdir is not None else folder
        argv = [sys.executable, "-I", "-c", _RUNNER, str(payload), str(result_path)]
        code_, out, err, timed_out, duration = await _run(argv, workdir=cwd, scratch=folder, limits=chosen)
        if timed_out:
            return RunOutcome(False, None, out, f"stopped after the {chosen.timeout_s:g} s time limit", code_, True,
                              duration)  # fmt: skip
        if not result_path.exists():
            reason = _killed_reason(code_, err, chosen)
            return RunOutcome(False, None, out, reason, code_, False, duration)
        try:
            data = json.loads(result_path.read_text(encoding="utf-8"))
        except ValueError:
            reason = f"the result could not be read ({_killed_reason(code_, err, chosen)}; over the file size limit?)"
            return RunOutcome(False, None, out, reason, code_, False, duration)
    return RunOutcome(bool(data["ok"]), data["result"], data["output"] + out, data["error"], code_, False, duration)


async def run_shell(command: str, *, limits: Limits | None = None, workdir: str | Path | None = None) -> RunOutcome:
    """Run a shell command line (``/bin/sh -c``) under the same limits."""
    chosen = limits or Limits()
    with tempfile.TemporaryDirectory(prefix="memexec-") as scratch:
        folder = Path(scratch)
        cwd = Path(workdir) if workdir is not None else folder
        code_, out, err, timed_out, duration = await _run(
            ["/bin/sh", "-c", command], workdir=cwd, scratch=folder, limits=chosen
        )
    if timed_out:
        return RunOutcome(False, None, out, f"stopped after the {chosen.timeout_s:g} s time limit", code_, True,
                          duration)  # fmt: skip
    ok = code_ == 0
    return RunOutcome(ok, code_, out, None if ok else _killed_reason(code_, err, chosen), code_, False, duration)


def _killed_reason(code: int | None, stderr: str, limits: Limits) -> str:
    if code is not None and code < 0:
        sig = signal.Signals(-code).name
        if -code in (signal.SIGXCPU, signal.SIGKILL):
            return f"killed by {sig}: over the {limits.cpu_s} s CPU limit or the {limits.memory_mb} MB memory limit"
        return f"killed by {sig}"
    tail = stderr.strip().splitlines()[-3:]
    return f"exit code {code}: " + (" | ".join(tail) if tail else "no error output")
