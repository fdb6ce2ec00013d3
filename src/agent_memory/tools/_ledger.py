"""``RecallLedger``: what a recall did, recorded by the tools as typed values (no JSON read back).

>>> ledger = RecallLedger()
>>> box = MemoryToolbox(search, scope=Scope.of("u1", "mentor"), ledger=ledger)  # doctest: +SKIP
>>> # ... the agent runs ...
>>> [r.memory_key for r in ledger.found()], ledger.handoff  # doctest: +SKIP

The ledger outlives one agent iteration (a window expansion starts a new agent with the same
ledger), so nothing a search found is lost when the model ends badly. :func:`rank_found` is the one
ordering of results found across searches; the offline planner uses it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ._models import (
    ExpandContextWindowOutput,
    HandoffInput,
    MemorySearchResultItem,
    SearchMemoriesInput,
    SearchMemoriesOutput,
)


@dataclass(frozen=True, slots=True)
class SearchRound:
    """One ``search_memories`` call: its arguments, its output, how long it took."""

    number: int
    arguments: SearchMemoriesInput
    output: SearchMemoriesOutput
    elapsed_ms: float


def rank_found(batches: Sequence[Sequence[MemorySearchResultItem]]) -> list[MemorySearchResultItem]:
    """Every result of the searches, once, in the order a recall reports them.

    The latest search that returned a memory decides its place and score: results of the latest
    search first, then those only earlier searches returned. Later rounds are broader, and scores of
    different modes are not on one scale, so the newest view wins. Within a search the engine's own
    order is kept: the score is one input of that ranking (with use, type priority and the coverage
    re-rank that gives a two-part question both parts), so sorting by it would undo the rest.
    """
    latest: dict[str, tuple[int, int, MemorySearchResultItem]] = {}
    for number, batch in enumerate(batches):
        for place, item in enumerate(batch):
            latest[item.memory_key] = (number, place, item)
    ordered = sorted(latest.values(), key=lambda t: (-t[0], t[1]))
    return [item for _, _, item in ordered]


@dataclass(slots=True)
class RecallLedger:
    """Searches, details read, the window expansion and the handoff of one recall."""

    searches: list[SearchRound] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    expansions: list[ExpandContextWindowOutput] = field(default_factory=list)
    handoff: HandoffInput | None = None
    #: Why the model's handoff was not accepted (bad or missing arguments), when it was not.
    handoff_problem: str | None = None
    #: What a deterministic first round found before a model drove the recall (its relevant memories,
    #: best first): given when the model's own work yields nothing relevant.
    fallback: tuple[MemorySearchResultItem, ...] = ()

    def found(self) -> list[MemorySearchResultItem]:
        """Every memory the successful searches returned, ranked by :func:`rank_found`."""
        return rank_found([s.output.results for s in self.searches if s.output.success])

    def relevant(self, threshold: float) -> list[MemorySearchResultItem]:
        """The memories to give the main model: score >= ``threshold``, only keys a search returned.

        With a valid handoff, its keys in its order (a key the searches never returned is dropped:
        a model cannot invent a memory); without one (bad arguments, time-out, a model that never
        handed off), the best found memories. The threshold is absolute: the same value means the
        same whichever model drove the recall. When that leaves nothing (a model that never searched,
        searched badly, or named only memories no search returned), the :attr:`fallback`'s memories.
        A recall that searched and handed off naming no memory gives none (:attr:`declined`).
        """
        if self.declined:
            return []
        return self._chosen(threshold) or [item for item in self.fallback if item.relevance_score >= threshold]

    @property
    def declined(self) -> bool:
        """Whether the recall searched, then handed off naming no memory: it judged nothing it found
        relevant, and the recall block is empty (a handoff made before any search is no judgement of
        what was found: the :attr:`fallback` stands)."""
        return self.handoff is not None and not self.handoff.relevant_memory_keys and bool(self.searches)

    def from_fallback(self, threshold: float) -> bool:
        """Whether :meth:`relevant` gives the fallback's memories (the model's work gave none)."""
        if self.declined or self._chosen(threshold):
            return False
        return any(item.relevance_score >= threshold for item in self.fallback)

    def _chosen(self, threshold: float) -> list[MemorySearchResultItem]:
        found = {item.memory_key: item for item in self.found()}
        if self.handoff is not None and self.handoff.relevant_memory_keys:
            chosen = [found[k] for k in dict.fromkeys(self.handoff.relevant_memory_keys) if k in found]
        else:
            chosen = list(found.values())
        return [item for item in chosen if item.relevance_score >= threshold]

    @property
    def window_size(self) -> int | None:
        """The window of the last approved expansion (``None``: never expanded)."""
        approved = [e for e in self.expansions if e.approved]
        return approved[-1].new_size if approved else None
