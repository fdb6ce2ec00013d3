"""Run code or a shell command in a separate, limited and (where the machine allows) isolated process.

Why not AutoGen's ``LocalCommandLineCodeExecutor``: its timeout does not kill the process group (a
child that forks keeps it waiting), output is lost on time-out, and it has no hook to set CPU and
memory limits before the code starts. Here every run gets a new session (the whole process group is
killed on time-out), ``RLIMIT_AS`` / ``RLIMIT_CPU`` / ``RLIMIT_FSIZE`` set before ``exec``, a scrubbed
environment and its own working folder.

With an available :class:`~._isolation.Isolation` (bubblewrap) the run also gets its own PID, network,
mount and IPC namespaces, uid 65534, a read-only file system outside its working folder and a process
limit (see ``_isolation``): that is what makes remembered code safe to run. ``isolation=None`` runs
the code as the same OS user with limits only; :class:`CommandExecutor` allows that only when the
operator opted in (``MEMORY_EXEC_ALLOW_UNISOLATED``).

>>> out = asyncio.run(run_python("print(memory['k']['port'])", memory={"k": {"port": 3306}}))  # doctest: +SKIP
>>> out.output  # doctest: +SKIP
'3306\\n'
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import os
import resource
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._isolation import IO_DIR, Isolation, prepare_dirs, python_binary, sandbox_argv, site_packages

#: Called with each new piece of the run's standard output while it runs.
OutputCallback = Callable[[str], None]

#: The program the child Python runs: it reads the payload file, runs the code with ``exec_locals``
#: (memory, messages, _output, _result) and writes the outcome as JSON. Printed output goes straight
#: to the process's stdout (unbuffered, so it can be streamed); ``_output`` is appended after it.
_RUNNER = r"""
import json, sys, traceback
payload_path, result_path = sys.argv[1], sys.argv[2]
with open(payload_path, encoding="utf-8") as fh:
    payload = json.load(fh)
sys.path.extend(payload.get("sys_path", []))
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
error = None
try:
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
output = scope["_output"] if isinstance(scope.get("_output"), str) else ""
with open(result_path, "w", encoding="utf-8") as fh:
    json.dump({"ok": error is None, "result": result, "output": output[-100000:], "error": error}, fh)
"""


@dataclass(frozen=True, slots=True)
class Limits:
    """Wall-clock seconds, CPU seconds, address space (MB), largest file written (MB) and, for an
    isolated run, how many processes the sandbox user may have at once."""

    timeout_s: float = 10.0
    cpu_s: int = 10
    memory_mb: int = 512
    file_mb: int = 50
    processes: int = 64

    def __post_init__(self) -> None:
        if not 0 < self.timeout_s <= 3600 or not 1 <= self.cpu_s <= 3600:
            raise ValueError("timeout_s must be in (0, 3600] and cpu_s in 1-3600")
        if not 64 <= self.memory_mb <= 65536 or not 1 <= self.file_mb <= 10240:
            raise ValueError("memory_mb must be 64-65536 and file_mb 1-10240")
        if not 4 <= self.processes <= 4096:
            raise ValueError("processes must be 4-4096")


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What a run did. ``timed_out`` / ``killed`` explain a missing result; ``isolated`` says whether
    it ran in the bubblewrap sandbox."""

    ok: bool
    result: Any
    output: str
    error: str | None
    exit_code: int | None
    timed_out: bool
    duration_ms: float
    isolated: bool = False


def _limit(limits: Limits) -> Any:
    def apply() -> None:  # runs in the child between fork and exec
        memory = limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
        size = limits.file_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def _environment(workdir: Path, isolation: Isolation | None) -> dict[str, str]:
    """A minimal environment: this Python first on PATH, UTF-8, nothing else of the parent's."""
    bindir = str(Path(python_binary() if isolation else sys.executable).parent)
    return {
        "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(workdir),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }


@dataclass(frozen=True, slots=True)
class _Place:
    """Where a run happens: ``io`` / ``workdir`` on the host, ``io_inside`` as the code sees it."""

    scratch: Path
    io: Path
    io_inside: str
    workdir: Path


def _place(scratch: Path, workdir: str | Path | None, isolation: Isolation | None) -> _Place:
    io = scratch / "io"
    cwd = Path(workdir).absolute() if workdir is not None else scratch / "work"
    if isolation is not None:
        prepare_dirs(isolation, io, scratch / "work")
        return _Place(scratch, io, IO_DIR, cwd)
    io.mkdir()
    cwd.mkdir(exist_ok=True)
    return _Place(scratch, io, str(io), cwd)


async def _run(
    command: Sequence[str],
    *,
    place: _Place,
    limits: Limits,
    isolation: Isolation | None,
    on_output: OutputCallback | None,
) -> tuple[int | None, str, str, bool, float]:
    started = time.perf_counter()
    env = _environment(place.workdir, isolation)
    argv = list(command)
    if isolation is not None:
        argv = sandbox_argv(
            isolation,
            command,
            workdir=place.workdir,
            io_dir=place.io,
            env=env,
            processes=limits.processes,
            tmp_mb=limits.file_mb,
        )
    out_path, err_path = place.scratch / "stdout.txt", place.scratch / "stderr.txt"
    # output goes to files, not pipes: a background child that keeps a pipe open cannot hold the run
    with out_path.open("wb") as out_fh, err_path.open("wb") as err_fh:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=place.workdir if isolation is None else place.scratch,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out_fh,
            stderr=err_fh,
            start_new_session=True,  # its own process group: a time-out kills grandchildren too
            preexec_fn=_limit(limits),
        )
        pump = _Pump(out_path, on_output) if on_output is not None else None
        streaming = asyncio.ensure_future(pump.run()) if pump is not None else None
        timed_out = False
        try:
            await asyncio.wait_for(process.wait(), timeout=limits.timeout_s)
        except TimeoutError:
            timed_out = True
        finally:
            # always: a time-out, a cancelled caller, or children left running in the background (in
            # the sandbox, killing bwrap ends its PID namespace: --die-with-parent)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            if process.returncode is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), timeout=5)
            if streaming is not None and pump is not None:
                streaming.cancel()
                pump.read()
    duration = (time.perf_counter() - started) * 1000
    return process.returncode, _tail(out_path, 100_000), _tail(err_path, 20_000), timed_out, duration


class _Pump:
    """Hands new stdout text to a callback every 0.1 s (at most 100,000 characters in all)."""

    def __init__(self, path: Path, callback: OutputCallback) -> None:
        self._path = path
        self._callback = callback
        self._offset = 0
        self._sent = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    async def run(self) -> None:
        while True:
            await asyncio.sleep(0.1)
            self.read()

    def read(self) -> None:
        if self._sent >= 100_000:
            return
        with self._path.open("rb") as fh:
            fh.seek(self._offset)
            data = fh.read(400_000)
        self._offset += len(data)
        text = self._decoder.decode(data)[: 100_000 - self._sent]
        if text:
            self._sent += len(text)
            self._callback(text)


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
    isolation: Isolation | None = None,
    on_output: OutputCallback | None = None,
) -> RunOutcome:
    """Run Python ``code`` with ``memory`` (and summaries, metadata, messages) as its variables,
    isolated when ``isolation`` is given (see the module docs)."""
    chosen = limits or Limits()
    with tempfile.TemporaryDirectory(prefix="memexec-", ignore_cleanup_errors=True) as scratch:
        place = _place(Path(scratch), workdir, isolation)
        packages = site_packages() if isolation is not None else None
        payload = {
            "code": code,
            "memory": dict(memory or {}),
            "memory_summary": dict(memory_summary or {}),
            "memory_meta": dict(memory_meta or {}),
            "messages": list(messages),
            "sys_path": [packages] if packages else [],
        }
        # ASCII JSON: a memory value may hold a lone surrogate, which no UTF-8 file can; the runner's
        # json.load gives the very same string back
        (place.io / "payload.json").write_text(json.dumps(payload), encoding="utf-8")
        python = python_binary() if isolation is not None else sys.executable
        inside = f"{place.io_inside}/payload.json", f"{place.io_inside}/result.json"
        argv = [python, "-I", "-u", "-c", _RUNNER, *inside]
        code_, out, err, timed_out, duration = await _run(
            argv, place=place, limits=chosen, isolation=isolation, on_output=on_output
        )
        isolated = isolation is not None
        if timed_out:
            return RunOutcome(
                False,
                None,
                out,
                f"stopped after the {chosen.timeout_s:g} s time limit",
                code_,
                True,
                duration,
                isolated,
            )
        result_path = place.io / "result.json"
        if not result_path.exists():
            reason = _killed_reason(code_, err, chosen, isolated)
            return RunOutcome(False, None, out, reason, code_, False, duration, isolated)
        try:
            data = json.loads(result_path.read_text(encoding="utf-8"))
        except ValueError:
            killed = _killed_reason(code_, err, chosen, isolated)
            reason = f"the result could not be read ({killed}; over the file size limit?)"
            return RunOutcome(False, None, out, reason, code_, False, duration, isolated)
    output = out + str(data.get("output") or "")
    return RunOutcome(bool(data["ok"]), data["result"], output, data["error"], code_, False, duration, isolated)


async def run_shell(
    command: str,
    *,
    limits: Limits | None = None,
    workdir: str | Path | None = None,
    isolation: Isolation | None = None,
    on_output: OutputCallback | None = None,
) -> RunOutcome:
    """Run a shell command line (``/bin/sh -c``) under the same limits (and isolation)."""
    chosen = limits or Limits()
    isolated = isolation is not None
    with tempfile.TemporaryDirectory(prefix="memexec-", ignore_cleanup_errors=True) as scratch:
        place = _place(Path(scratch), workdir, isolation)
        code_, out, err, timed_out, duration = await _run(
            ["/bin/sh", "-c", command], place=place, limits=chosen, isolation=isolation, on_output=on_output
        )
    if timed_out:
        return RunOutcome(
            False, None, out, f"stopped after the {chosen.timeout_s:g} s time limit", code_, True, duration, isolated
        )
    ok = code_ == 0
    reason = None if ok else _killed_reason(code_, err, chosen, isolated)
    return RunOutcome(ok, code_, out, reason, code_, False, duration, isolated)


def _killed_reason(code: int | None, stderr: str, limits: Limits, isolated: bool) -> str:
    # bwrap reports a command killed by signal N as exit code 128 + N
    signum = -code if code is not None and code < 0 else code - 128 if isolated and code and 128 < code < 160 else 0
    if signum in signal.valid_signals():
        sig = signal.Signals(signum).name
        if signum in (signal.SIGXCPU, signal.SIGKILL):
            return f"killed by {sig}: over the {limits.cpu_s} s CPU limit or the {limits.memory_mb} MB memory limit"
        return f"killed by {sig}"
    tail = stderr.strip().splitlines()[-3:]
    return f"exit code {code}: " + (" | ".join(tail) if tail else "no error output")
