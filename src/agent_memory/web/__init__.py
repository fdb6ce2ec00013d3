"""The web chat (``agent-memory serve``): AI friends, streamed replies with memory recall, the two
memory-recall and chat settings tabs and a memory page, on one local page.

>>> from agent_memory.web import create_app
>>> app = create_app(MemorySystem.from_settings())  # doctest: +SKIP

Without ``MEMORY_CHAT_MODEL_CLIENT`` the chat answers with :class:`OfflineResponder`, a
deterministic client that needs no download and says so on the page.
"""

from ._api import every_worker_serves
from ._app import create_app, serve
from ._chat import MAX_MESSAGE_CHARS, ChatService, ThinkSplitter, split_think
from ._responder import OFFLINE_LABEL, OfflineResponder, offline_reply

__all__ = [
    "MAX_MESSAGE_CHARS",
    "OFFLINE_LABEL",
    "ChatService",
    "OfflineResponder",
    "ThinkSplitter",
    "create_app",
    "every_worker_serves",
    "offline_reply",
    "serve",
    "split_think",
]
