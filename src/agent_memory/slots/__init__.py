"""Memory slots at run time: the placeholder grammar, the CommandExecutor and its sandbox.

>>> from agent_memory.slots import parse_placeholders
>>> [(p.key, p.format, p.field) for p in parse_placeholders("[memory:a] [memory:b:full] [memory:c:meta:port]")]
[('a', 'default', None), ('b', 'full', None), ('c', 'meta', 'port')]
"""

from ._executor import CommandExecutor, CommandResult, looks_like_shell, to_python
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

__all__ = [
    "PLACEHOLDER",
    "CommandExecutor",
    "CommandResult",
    "Limits",
    "Placeholder",
    "PlaceholderError",
    "Resolution",
    "RunOutcome",
    "SlotValue",
    "format_value",
    "looks_like_shell",
    "parse_placeholders",
    "placeholder_keys",
    "resolve",
    "run_python",
    "run_shell",
    "substitute",
    "to_python",
]
