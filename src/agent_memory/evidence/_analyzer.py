"""The search terms of a chat message: the one rule, shared by writes, late analysis and queries.

A message's terms are :meth:`Tokenizer.tokens` of its content (folded, segmented, stemmed, stop words
dropped, repeats kept as term frequency); a lexical query's terms are the same tokenizer's
(:func:`~._query.parse_query`). Installed on the data layer (``layer.messages.set_analyzer``), it runs on
every message write, and the storage keeps the terms in the message's own transaction.

>>> analyzer = MessageTermsAnalyzer()
>>> layer.messages.set_analyzer(analyzer)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..text import Tokenizer

#: Batches holding more characters than this are tokenised in a worker thread (an import's thousands of
#: messages, or one huge message, would otherwise hold every other request of the process).
OFF_LOOP_CHARS = 8_000


class MessageTermsAnalyzer:
    """Implements ``data_layer.MessageAnalyzer`` with ``tokenizer`` (default: :class:`Tokenizer`)."""

    def __init__(self, tokenizer: Tokenizer | None = None) -> None:
        self.tokenizer = tokenizer or Tokenizer()

    def terms(self, content: str) -> list[str]:
        """The terms of one message, in reading order."""
        return self.tokenizer.tokens(content)

    async def message_terms(self, contents: Sequence[str]) -> list[list[str]]:
        """The terms of each of ``contents``, in order."""
        if sum(len(c) for c in contents) > OFF_LOOP_CHARS:
            return await asyncio.to_thread(self._all, list(contents))
        return self._all(contents)

    def _all(self, contents: Sequence[str]) -> list[list[str]]:
        return [self.terms(c) for c in contents]
