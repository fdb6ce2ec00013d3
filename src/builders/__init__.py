"""Builders that wire agent-fusion-memory into AutoGen agents.

>>> from builders import AgentBuilder, MEMORY_TOOLS_SYSTEM_PROMPT
"""

from ._agent_builder import MAIN_AGENT_TOOLS, MEMORY_TOOLS_SYSTEM_PROMPT, AgentBuilder, Hook

__all__ = ["MAIN_AGENT_TOOLS", "MEMORY_TOOLS_SYSTEM_PROMPT", "AgentBuilder", "Hook"]
