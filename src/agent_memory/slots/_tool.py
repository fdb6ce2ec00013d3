"""``run_code``: the main agent's tool that runs code or a remembered command with memory slots.

>>> tool = RunCodeTool(system.executor(user_id="u1", friend_id="mentor"), events=queue)  # doctest: +SKIP

The model writes Python with ``[memory:KEY]`` placeholders (or names a remembered command with
``mode="command"``); the tool resolves the slots for the agent's user and friend (a sensitive memory
of another friend is refused: the model cannot grant that permission), runs the code through the
executor's isolated sandbox and streams the run as events. Failures come back as the result model
with ``success=False`` and a message, never as an exception.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

from autogen_core import CancellationToken
from pydantic import BaseModel, Field

from .._fixed_schema import FixedSchemaTool
from ..text import neutralize, neutralize_value
from ._events import CodeRunFinishedEvent, CodeRunOutputEvent, CodeRunStartedEvent
from ._executor import CommandExecutor, CommandResult
from ._placeholders import PlaceholderError, placeholder_keys

RUN_CODE_TOOL = "run_code"
RUN_CODE_DESCRIPTION = (
    "Run Python code in an isolated sandbox (no network, no database, 10 s). Write [memory:KEY] where a "
    "remembered value belongs (e.g. cfg = [memory:db-config-001]; [memory:KEY:summary], "
    "[memory:KEY:meta:FIELD]); print results or set _result. mode='command' re-runs a remembered command: "
    "code='[memory:cmd-001]'."
)


class RunCodeInput(BaseModel):
    """What the model passes."""

    code: str = Field(
        ...,
        min_length=1,
        max_length=20_000,
        description="Python code with [memory:KEY] slots, "
        "or for mode 'command' the [memory:KEY] of a remembered command",
    )
    mode: Literal["python", "command"] = Field(
        "python", description="python: run the code; command: re-run the remembered command it names"
    )


class RunCodeOutput(BaseModel):
    """What the model gets back: the result (``_result``), printed output, error, and the key of the
    ``command_output`` memory that records the run."""

    success: bool
    result: Any = None
    output: str = ""
    error: str | None = None
    memory_key: str | None = None


class RunCodeTool(FixedSchemaTool[RunCodeInput, RunCodeOutput]):
    """The ``run_code`` tool on one executor; ``events`` receives the run's events (see ``_events``)."""

    def __init__(
        self, executor: CommandExecutor, *, events: asyncio.Queue[Any] | None = None, source: str = "run_code"
    ) -> None:
        super().__init__(RunCodeInput, RunCodeOutput, RUN_CODE_TOOL, RUN_CODE_DESCRIPTION)
        self.executor = executor
        self.events = events
        self.source = source

    def _emit(self, event: Any) -> None:
        if self.events is not None:
            self.events.put_nowait(event)

    async def run(self, args: RunCodeInput, cancellation_token: CancellationToken) -> RunCodeOutput:
        try:
            refs = placeholder_keys(args.code)
        except PlaceholderError as exc:
            return self._done(CommandResult(False, error=str(exc)))
        isolated = self.executor.isolation.available
        self._emit(
            CodeRunStartedEvent(
                source=self.source, content=args.code, mode=args.mode, memory_refs=refs, isolated=isolated
            )
        )

        def stream(text: str) -> None:
            self._emit(CodeRunOutputEvent(source=self.source, content=text))

        if args.mode == "command":
            result = await self.executor.execute_command_references(args.code, on_output=stream)
            return self._done(result)
        try:
            slots = await self.executor.slots(refs) if refs else {}
        except PlaceholderError as exc:
            return self._done(CommandResult(False, error=str(exc), code=args.code))
        return self._done(await self.executor.execute_with_memory_env(args.code, slots, on_output=stream))

    def _done(self, result: CommandResult) -> RunCodeOutput:
        self._emit(
            CodeRunFinishedEvent(
                source=self.source,
                content=result.output[-2000:],
                success=result.success,
                error=result.error,
                timed_out=result.timed_out,
                duration_ms=result.duration_ms,
                memory_key=result.memory_key,
            )
        )
        # the model reads it: what the code printed from memory values is neutralised like the values
        return RunCodeOutput(
            success=result.success,
            result=neutralize_value(result.result),
            output=neutralize(result.output[-4000:]),
            error=None if result.error is None else neutralize(result.error),
            memory_key=result.memory_key,
        )

    def return_value_as_string(self, value: Any) -> str:
        if isinstance(value, RunCodeOutput):
            return json.dumps(value.model_dump(), ensure_ascii=False, default=repr)
        return str(value)
