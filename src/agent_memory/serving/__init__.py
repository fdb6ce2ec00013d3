"""Serving the memory system to people and programs: the access rule shared by the web chat
(``agent_memory.web``) and the MCP server (``agent_memory.mcp``)."""

from ._access import check_bind, host_is_loopback, is_loopback, token_matches
from ._port import check_port

__all__ = ["check_bind", "check_port", "host_is_loopback", "is_loopback", "token_matches"]
