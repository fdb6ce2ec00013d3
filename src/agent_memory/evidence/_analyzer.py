"""The search terms of a chat message: the one rule, shared by writes, late analysis and queries.

A message's terms are :meth:`Tokenizer.tokens` of its content (folded, segmented, stemmed, stop words
dropped, repeats kept as term frequency); a lexical query's terms are the same tokenizer's
(:func:`~._query.parse_query`). Installed on the data layer (``layer.messages.set_analyzer``), it runs on
every message write, and the storage keeps the terms in the message's own transaction. The stored
terms do not say which tokenizer made them: after a change of the tokenizer, messages keep their old
terms until they are cleared and analysed again (a known limit).

Messages stored without terms (before the engine existed, or by a layer without the analyzer) are
analysed by :func:`analyse_user` (the evidence search, before it reads) or :func:`analyse_stored` (every
user's, as ``agent-memory db upgrade`` does after migrating).

>>> analyzer = MessageTermsAnalyzer()
>>> layer.messages.set_analyzer(analyzer)  # doctest: +SKIP
>>> await analyse_stored(layer, analyzer)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from data_layer import AgentFusionDataLayer

from ..text import Tokenizer

#: Batches holding more characters than this are tokenised in a worker thread (an import's thousands of
#: messages, or one huge message, would otherwise hold every other request of the process).
OFF_LOOP_CHARS = 8_000
#: Messages per read, analysis and write of a late analysis (the most the storage reads at once).
ANALYSE_BATCH = 1000


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


async def analyse_user(
    layer: AgentFusionDataLayer,
    analyzer: MessageTermsAnalyzer,
    user_id: str,
    *,
    on_batch: Callable[[int], None] | None = None,
) -> int:
    """Analyse and store the terms of the user's messages stored without them, a batch at a time (read,
    tokenise off the event loop, one write); returns how many were filled. Another process doing the same
    at once fills some first: each message is stored once, with the same terms."""
    messages = layer.messages
    filled = 0
    while rows := await messages.unanalysed(user_id=user_id, limit=ANALYSE_BATCH):
        terms = await analyzer.message_terms([content for _, content in rows])
        pairs = [(mid, t) for (mid, _), t in zip(rows, terms, strict=True)]
        done = await messages.store_terms(user_id=user_id, terms=pairs)
        filled += done
        if on_batch is not None:
            on_batch(done)
        if len(rows) < ANALYSE_BATCH:
            break
    return filled


async def analyse_stored(
    layer: AgentFusionDataLayer,
    analyzer: MessageTermsAnalyzer,
    *,
    on_batch: Callable[[str, int], None] | None = None,
) -> tuple[int, int]:
    """:func:`analyse_user` for every user holding messages without terms; returns ``(messages, users)``.
    ``on_batch(user_id, filled)`` is called after each batch's write. Run again, it finds nothing to do."""
    total = users = 0
    after: str | None = None
    while found := await layer.messages.unanalysed_users(after=after):
        for user in found:
            report = (lambda n, user=user: on_batch(user, n)) if on_batch is not None else None
            filled = await analyse_user(layer, analyzer, user, on_batch=report)
            total += filled
            users += filled > 0
        after = found[-1]
    return total, users
