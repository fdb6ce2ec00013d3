"""``agent-memory exec --user U [--friend F] CODE``: run code with memory slots from the command line.

The code runs through the system's :class:`CommandExecutor`, so it is isolated by bubblewrap (or
refused where the machine cannot isolate it and ``MEMORY_EXEC_ALLOW_UNISOLATED`` is off), receives
only the slots it names, and is saved as a ``command_output`` memory of the user (and friend).
"""

from __future__ import annotations

import json

import typer

from ._common import URL_HELP, emit_json, fail, open_system, run

#: "\[" keeps the slots' brackets out of rich markup, which --help renders (and would drop them)
CODE_HELP = r"Python code with \[memory:KEY] slots (with --command: the \[memory:KEY] of a remembered command)"


@run
async def exec_cmd(
    code: str = typer.Argument(..., help=CODE_HELP),
    user: str = typer.Option(..., "--user", "-u", help="The user whose memories fill the slots"),
    friend: str | None = typer.Option(None, "--friend", "-f", help="The AI friend the run is for"),
    command: bool = typer.Option(False, "--command", "-c", help="Re-run the remembered command CODE names"),
    allow_sensitive: bool = typer.Option(
        False, "--allow-sensitive", help="Let sensitive memories of another friend (or the shared profile) into slots"
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the whole result as JSON"),
    url: str | None = typer.Option(None, "--db", "--url", help=URL_HELP),
) -> None:
    r"""Run CODE isolated, with \[memory:KEY] slots filled from the user's memories; print its output
    (as it comes) and its _result."""
    import sys

    from ..slots import PlaceholderError, placeholder_keys

    streamed: list[str] = []

    def stream(text: str) -> None:
        if not as_json:
            streamed.append(text)
            sys.stdout.write(text)
            sys.stdout.flush()

    async with open_system(url) as system:
        executor = system.executor(user_id=user, friend_id=friend)
        if command:
            result = await executor.execute_command_references(code, allow_sensitive=allow_sensitive, on_output=stream)
        else:
            try:
                keys = placeholder_keys(code)
                slots = await executor.slots(keys, allow_sensitive=allow_sensitive) if keys else {}
            except PlaceholderError as exc:
                fail(str(exc))
                raise typer.Exit(code=2) from None
            result = await executor.execute_with_memory_env(code, slots, on_output=stream)
    if as_json:
        emit_json(
            {
                "success": result.success,
                "result": result.result,
                "output": result.output,
                "error": result.error,
                "timed_out": result.timed_out,
                "duration_ms": result.duration_ms,
                "memory_key": result.memory_key,
                "memory_refs": list(result.memory_refs),
            }
        )
    else:
        rest = result.output[len("".join(streamed)) :]
        if rest:
            typer.echo(rest, nl=not rest.endswith("\n"))
        if result.result is not None and result.language == "python":  # a shell run's result is its exit code
            typer.echo(json.dumps(result.result, ensure_ascii=False, default=repr))
    if not result.success:
        # one line: the last line of a traceback names the exception (--json has the whole traceback)
        lines = [line.strip() for line in (result.error or "failed").strip().splitlines() if line.strip()]
        fail(lines[-1] if lines else "failed")
        raise typer.Exit(code=2)
