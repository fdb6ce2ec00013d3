"""Memory slots at run time: the placeholder grammar, the CommandExecutor and its isolated sandbox.

>>> from agent_memory.slots import parse_placeholders
>>> [(p.key, p.format, p.field) for p in parse_placeholders("[memory:a] [memory:b:full] [memory:c:meta:port]")]
[('a', 'default', None), ('b', 'full', None), ('c', 'meta', 'port')]
"""

from ._events import CodeRunFinishedEvent, CodeRunOutputEvent, CodeRunStartedEvent
from ._executor import CommandExecutor, CommandResult, looks_like_shell, to_python
from ._isolation import SANDBOX_UID, Isolation, detect_isolation, unisolated_error
from ._placeholders import (
    PLACEHOLDER,
    Placeholder,
    PlaceholderError,
    Resolution,
    SlotValue,
    format_value,
    parse_placeholders,
    placeholder_keys,
    resolve,
    substitute,
)
from ._sandbox import Limits, RunOutcome, run_python, run_shell
from ._sensitivity import SensitiveMemoryError
from ._tool import RUN_CODE_TOOL, RunCodeInput, RunCodeOutput, RunCodeTool

__all__ = [
    "PLACEHOLDER",
    "RUN_CODE_TOOL",
    "SANDBOX_UID",
    "CodeRunFinishedEvent",
    "CodeRunOutputEvent",
    "CodeRunStartedEvent",
    "CommandExecutor",
    "CommandResult",
    "Isolation",
    "Limits",
    "Placeholder",
    "PlaceholderError",
    "Resolution",
    "RunCodeInput",
    "RunCodeOutput",
    "RunCodeTool",
    "RunOutcome",
    "SensitiveMemoryError",
    "SlotValue",
    "detect_isolation",
    "format_value",
    "looks_like_shell",
    "parse_placeholders",
    "placeholder_keys",
    "resolve",
    "run_python",
    "run_shell",
    "substitute",
    "to_python",
    "unisolated_error",
]
