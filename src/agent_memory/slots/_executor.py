"""``CommandExecutor``: runs code and remembered commands with memory slots filled in.

>>> executor = system.executor(user_id="u1", friend_id="mentor")  # doctest: +SKIP
>>> slots = await executor.slots(["db-config-001"])  # doctest: +SKIP
>>> r = await executor.execute_with_memory_env("_result = [memory:db-config-001]['port']", slots)  # doctest: +SKIP
>>> r.result  # doctest: +SKIP
3306
>>> await executor.execute_command_references("重新执行 [memory:cmd-001]")  # doctest: +SKIP

In code, ``[memory:KEY]`` (and ``:full``) stands for the memory's content (JSON-decoded when it is
JSON), ``[memory:KEY:summary]`` for its summary and ``[memory:KEY:meta:FIELD]`` for a metadata field;
``memory["KEY"]`` works too. The code runs in a separate process (see ``_sandbox``) that receives only
the slots it was given. A malformed placeholder or a memory that is not available: nothing runs.

Where the machine cannot isolate runs (no working bubblewrap, see ``_isolation``), nothing runs either
unless the executor was made with ``allow_unisolated=True`` (``MEMORY_EXEC_ALLOW_UNISOLATED``); the
error says so. A sensitive memory (``agent_memory.domain.reach``) becomes a slot only for the friend it belongs to,
or with ``allow_sensitive=True``.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autogen_core.models import AssistantMessage, LLMMessage, SystemMessage, UserMessage

from data_layer import AgentFusionDataLayer, InvalidInputError, Scope, storable_copy

from ..domain import SENSITIVE_FIELD, reach, sensitivity
from ._isolation import Isolation, detect_isolation, unisolated_error, workdir_problem
from ._placeholders import Placeholder, PlaceholderError, SlotValue, format_value, placeholder_keys, substitute
from ._sandbox import Limits, OutputCallback, RunOutcome, run_python, run_shell
from ._sensitivity import SensitiveMemoryError

logger = logging.getLogger(__name__)
_SHELL_START = re.compile(r"^(python3?|bash|sh|ls|echo|cat|cd|git|pip|make|npm|node|docker|kubectl|curl|mysql|psql)\b")


@dataclass(frozen=True, slots=True)
class CommandResult:
    """The outcome of one run; ``memory_key`` is the ``command_output`` memory that records it."""

    success: bool
    result: Any = None
    output: str = ""
    error: str | None = None
    memory_refs: tuple[str, ...] = ()
    language: str = "python"
    timed_out: bool = False
    duration_ms: float = 0.0
    memory_key: str | None = None
    code: str = field(default="", repr=False)


def to_python(code: str, slots: Mapping[str, SlotValue]) -> str:
    """Code with its placeholders turned into variable look-ups (``memory["k"]``,
    ``memory_summary["k"]``, ``memory_meta["k"]["field"]``)."""

    def lookup(slot: SlotValue, p: Placeholder) -> str:
        key = json.dumps(p.key, ensure_ascii=False)
        if p.format == "summary":
            return f"memory_summary[{key}]"
        if p.format == "meta":
            format_value(slot, p)  # raises, naming the field, when the memory has no such field
            return f"memory_meta[{key}][{json.dumps(p.field, ensure_ascii=False)}]"
        return f"memory[{key}]"

    return substitute(code, slots, lookup).text


def shell_fill(command: str, slots: Mapping[str, SlotValue]) -> str:
    """A shell line with each placeholder replaced by its value as one quoted word (``shlex.quote``),
    so memory text can never add shell syntax (``; rm -rf ~`` stays a literal argument)."""
    return substitute(command, slots, lambda slot, p: shlex.quote(format_value(slot, p))).text


_SURROGATE = re.compile("[\ud800-\udfff]")


def unencodable(text: str, *, name: str) -> str | None:
    """Why ``text`` cannot run (a lone surrogate, which no program text can hold), or ``None``."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return (
        f"{name} holds a lone surrogate (U+{ord(found.group()):04X}) at position {found.start()}, which is no "
        f"valid text: remove it, or write it as an escape in a string literal ('\\u{ord(found.group()):04x}')"
    )


def looks_like_shell(command: str) -> bool:
    """A one-line command that starts with a program name (``python train.py``, ``ls -la``)."""
    text = command.strip()
    return "\n" not in text and bool(_SHELL_START.match(text))


class CommandExecutor:
    """Runs code with memory slots for one user (and AI friend), each run saved as a memory.

    ``limits`` caps wall-clock time, CPU, memory, file size and processes; ``workdir`` is where
    commands run (default: a fresh temporary folder per run; as root it must be usable by uid 65534);
    ``save_runs`` records each run as a ``command_output`` memory with the code, the result and the
    referenced keys. ``isolation`` (default: :func:`detect_isolation`, probed once per process) is how
    runs are isolated; when it is not available, runs are refused unless ``allow_unisolated``.
    """

    def __init__(
        self,
        layer: AgentFusionDataLayer,
        *,
        scope: Scope,
        limits: Limits | None = None,
        workdir: str | Path | None = None,
        save_runs: bool = True,
        isolation: Isolation | None = None,
        allow_unisolated: bool = False,
    ) -> None:
        if not isinstance(scope, Scope):
            raise TypeError("scope must be a data_layer.Scope, e.g. Scope.of(user_id, friend_id)")
        self.layer = layer
        self.scope = scope
        self.limits = limits or Limits()
        self.workdir = workdir
        self.save_runs = save_runs
        self.isolation = isolation if isolation is not None else detect_isolation()
        self.allow_unisolated = allow_unisolated

    def refusal(self) -> str | None:
        """Why a run would be refused before it starts (no isolation and no opt-in; a working folder
        the sandbox user cannot use), or ``None``."""
        if not self.isolation.available:
            return None if self.allow_unisolated else unisolated_error(self.isolation)
        if self.workdir is not None:
            return workdir_problem(self.isolation, Path(self.workdir))
        return None

    def _run_isolation(self) -> Isolation | None:
        return self.isolation if self.isolation.available else None

    @property
    def user_id(self) -> str:
        """The scope's user."""
        return self.scope.user_id

    @property
    def friend_id(self) -> str | None:
        """The scope's AI friend (``None``: the user's own view)."""
        return self.scope.friend_id

    async def slots(self, keys: Sequence[str], *, allow_sensitive: bool = False) -> dict[str, SlotValue]:
        """The user's memories with these keys, as slots (another friend's events are not available).
        Raises :class:`PlaceholderError` naming the keys that are missing, and its subclass
        ``SensitiveMemoryError`` for a sensitive memory of another friend (unless ``allow_sensitive``).

        >>> await executor.slots(["db-config-001"])  # doctest: +SKIP
        """
        if isinstance(keys, str) or not isinstance(keys, Sequence):
            raise InvalidInputError(f'keys must be a list of memory keys such as ["db-config-001"], not {keys!r:.80}')
        found = await self.layer.memory.get_many(user_id=self.user_id, memory_keys=list(dict.fromkeys(keys)))
        gates = {k: reach(self.scope, r, allow_sensitive=allow_sensitive) for k, r in found.items()}
        visible = {k: gate.record for k, gate in gates.items() if gate.seen}
        missing = [k for k in dict.fromkeys(keys) if k not in visible]
        if missing:
            raise PlaceholderError(f"no memory {missing} for this user and friend; search for the right key first")
        for gate in gates.values():
            if gate.seen and gate.withheld is not None:
                raise SensitiveMemoryError(gate.refusal())
        return {k: SlotValue(k, r.summary, r.content, r.metadata, r.memory_type) for k, r in visible.items()}

    async def prepare_memory_context(
        self, messages: Sequence[LLMMessage], slots: Mapping[str, SlotValue] | Sequence[SlotValue]
    ) -> list[LLMMessage]:
        """The messages with a system message in front listing the available slots."""
        items = list(slots.values()) if isinstance(slots, Mapping) else list(slots)
        if not items:
            return list(messages)
        lines = "\n".join(f"- [memory:{s.key}] {s.summary}" for s in items)
        note = "你可以通过 [memory:key] 引用这些记忆，执行时会将记忆内容作为变量传入 Python 环境。"
        return [SystemMessage(content=f"可用记忆槽:\n{lines}\n\n{note}"), *messages]

    async def execute_with_memory_env(
        self,
        code: str,
        slots: Mapping[str, SlotValue] | Sequence[SlotValue],
        recent_messages: Sequence[LLMMessage] = (),
        *,
        on_output: OutputCallback | None = None,
    ) -> CommandResult:
        """Run Python ``code`` with ``memory``, ``messages`` (the last 10 as text), ``_output`` and
        ``_result``; stdout becomes ``_output`` (and goes to ``on_output`` as it is printed).
        Placeholders must name given slots, or nothing runs."""
        given = dict(slots) if isinstance(slots, Mapping) else {s.key: s for s in slots}
        refused = self.refusal() or unencodable(code, name="the code")
        if refused:
            return CommandResult(False, error=refused, code=code)
        try:
            refs = tuple(placeholder_keys(code))
            program = to_python(code, given)
        except PlaceholderError as exc:
            return CommandResult(False, error=str(exc), code=code)
        outcome = await run_python(
            program,
            memory={k: s.value() for k, s in given.items()},
            memory_summary={k: s.summary for k, s in given.items()},
            memory_meta={k: dict(s.metadata) for k, s in given.items()},
            messages=_message_lines(recent_messages),
            limits=self.limits,
            workdir=self.workdir,
            isolation=self._run_isolation(),
            on_output=on_output,
        )
        return await self._finish(code, "python", refs, outcome, given.values())

    async def execute_command_references(
        self,
        user_request: str,
        referenced_memories: Sequence[str] | None = None,
        *,
        allow_sensitive: bool = False,
        on_output: OutputCallback | None = None,
    ) -> CommandResult:
        """Run the remembered command a request refers to (``"重新执行 [memory:cmd-001]"``).

        The first referenced ``command_output`` memory is the command: a shell line
        (``metadata["language"] == "shell"``, or one line starting with a program name) runs with
        its placeholders filled in as text; anything else runs as Python with the other referenced
        memories as slots. ``allow_sensitive``: see :meth:`slots`.
        """
        refused = self.refusal()
        if refused:
            return CommandResult(False, error=refused)
        try:
            keys = list(referenced_memories) if referenced_memories else placeholder_keys(user_request)
            if not keys:
                raise PlaceholderError("the request names no memory; write it as [memory:KEY]")
            slots = await self.slots(keys, allow_sensitive=allow_sensitive)
        except (PlaceholderError, InvalidInputError) as exc:
            return CommandResult(False, error=str(exc))
        commands = [s for s in slots.values() if s.memory_type == "command_output"]
        if not commands:
            return CommandResult(False, error=f"none of {keys} is a command (memory_type command_output)")
        command = commands[0]
        language = str(command.metadata.get("language") or ("shell" if looks_like_shell(command.content) else "python"))
        if language not in ("shell", "bash", "sh"):
            messages = [UserMessage(content=user_request, source="user")]
            return await self.execute_with_memory_env(command.content, slots, messages, on_output=on_output)
        try:
            more = [k for k in placeholder_keys(command.content) if k not in slots]
            slots.update(await self.slots(more, allow_sensitive=allow_sensitive) if more else {})
            line = shell_fill(command.content, slots)
        except PlaceholderError as exc:
            return CommandResult(False, error=str(exc), code=command.content, language="shell")
        problem = unencodable(line, name="the command line (with its memory values)")
        if problem:
            return CommandResult(False, error=problem, code=command.content, language="shell")
        outcome = await run_shell(
            line, limits=self.limits, workdir=self.workdir, isolation=self._run_isolation(), on_output=on_output
        )
        return await self._finish(line, "shell", tuple(keys), outcome, slots.values())

    async def _finish(
        self, code: str, language: str, refs: tuple[str, ...], outcome: RunOutcome, used: Iterable[SlotValue]
    ) -> CommandResult:
        key = None
        if self.save_runs:
            # a run that read a sensitive memory may print it: its record is as sensitive
            marks = [sensitivity(content=s.content, summary=s.summary, metadata=s.metadata) for s in used]
            try:
                key = await self._save(code, language, refs, outcome, next((m for m in marks if m), None))
            except Exception:  # the run happened; its result is returned even if it cannot be saved
                logger.warning("could not save a command run", exc_info=True)
        return CommandResult(
            success=outcome.ok,
            result=outcome.result,
            output=outcome.output,
            error=outcome.error,
            memory_refs=refs,
            language=language,
            timed_out=outcome.timed_out,
            duration_ms=round(outcome.duration_ms, 1),
            memory_key=key,
            code=code,
        )

    async def _save(
        self, code: str, language: str, refs: tuple[str, ...], outcome: RunOutcome, sensitive: str | None
    ) -> str:
        key = f"run-{uuid.uuid4().hex[:12]}"
        first = next((ln.strip() for ln in code.splitlines() if ln.strip()), "")
        record = {
            "code": code,
            "language": language,
            "result": outcome.result,
            "output": outcome.output[-5000:],
            "error": outcome.error,
            "referenced_keys": list(refs),
        }
        await self.layer.memory.add(
            user_id=self.user_id,
            friend_id=self.friend_id,
            memory_key=key,
            memory_type="command_output",
            # what a run printed may hold what no backend stores (a NUL, a lone surrogate): the record
            # keeps the rest rather than being lost
            summary=storable_copy(f"执行{'成功' if outcome.ok else '失败'}: {first}"[:120]),
            content=storable_copy(json.dumps(record, ensure_ascii=False, default=repr)),
            metadata={
                "referenced_keys": list(refs),
                "success": outcome.ok,
                "language": language,
                "isolated": outcome.isolated,
                **({SENSITIVE_FIELD: sensitive} if sensitive else {}),
            },
            keywords=[r for r in refs if len(r) <= 100][:5] or None,
        )
        return key


def _message_lines(messages: Sequence[LLMMessage]) -> list[str]:
    lines = []
    for m in list(messages)[-10:]:
        if isinstance(m, UserMessage | AssistantMessage | SystemMessage) and isinstance(m.content, str):
            role = {UserMessage: "User", AssistantMessage: "Assistant", SystemMessage: "System"}[type(m)]
            lines.append(f"{role}: {m.content}")
    return lines
