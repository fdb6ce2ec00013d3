"""The MCP server of the memory system (``agent-memory mcp``): one user's memories as MCP tools.

Tools: ``recall_memory``; ``search_memories`` and ``get_memory_detail``;
``add_memory`` and ``list_memories``; the evidence tools ``messages_list``, ``lexical_search``,
``semantic_search`` and ``neighbors``. The user is bound by the server's configuration, never by a
tool argument. Transports: stdio (default) and streamable HTTP behind ``agent_memory.serving``'s rule.

>>> from agent_memory.mcp import MCP_TOOLS
>>> list(MCP_TOOLS)[:3]
['recall_memory', 'search_memories', 'get_memory_detail']
>>> async with MemorySystem.from_settings() as system:  # doctest: +SKIP
...     await serve_stdio(system, user_id="alice")
"""

from ._server import MAX_BODY_BYTES, MCP_PATH, BearerTokenMiddleware, build_server, http_app, serve_http, serve_stdio
from ._tools import MCP_TOOLS, McpTool, McpToolError, MemoryMcpTools, explain_arguments

__all__ = [
    "MAX_BODY_BYTES",
    "MCP_PATH",
    "MCP_TOOLS",
    "BearerTokenMiddleware",
    "McpTool",
    "McpToolError",
    "MemoryMcpTools",
    "build_server",
    "explain_arguments",
    "http_app",
    "serve_http",
    "serve_stdio",
]
