"""The recall's search rounds and the limits every tool call obeys, whichever model makes the calls.

>>> limits = ToolLimits(rounds=4)
>>> [r.strategy for r in limits.plan], limits.max_consecutive_searches
(['precise', 'expanded', 'semantic', 'context'], 4)

The recall's search rounds: precise (keyword, score >= 0.7, 5 results, 0.5 s), expanded (hybrid with
synonyms, >= 0.6, 8 results, 0.8 s), semantic (>= 0.5, 10 results, 1 s). A user may allow up to five
rounds; rounds four and five widen the query with the earlier user messages (``context``) and finally
accept any score that still clears the user's threshold (``broad``). A search's score is the
calibrated relevance of the search engine (see ``agent_memory.search``): 0.5 means a memory holds
about a fifth of the query's weight, 0.7 about a third, 0.85 nearly half.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

SearchModeName = Literal["keyword", "hybrid", "semantic"]

#: Results per search and consecutive searches.
MAX_RESULTS = 10
MAX_CONSECUTIVE_SEARCHES = 3


@dataclass(frozen=True, slots=True)
class RoundConfig:
    """One search round: strategy name, mode, lowest score kept, most results, time limit (s).

    ``with_context`` adds the earlier user messages of the window to the query.
    """

    strategy: str
    search_mode: SearchModeName
    min_score: float
    max_results: int
    timeout_s: float
    with_context: bool = False


#: The semantic round's lowest score; the offline planner scores the semantic round in hybrid mode,
#: where a stored embedder's likeness takes part (see ``MemRecallAgent``).
SEED_ROUNDS: tuple[RoundConfig, ...] = (
    RoundConfig("precise", "keyword", 0.7, 5, 0.5),
    RoundConfig("expanded", "hybrid", 0.6, 8, 0.8),
    RoundConfig("semantic", "semantic", 0.5, 10, 1.0),
    RoundConfig("context", "hybrid", 0.5, 10, 1.0, with_context=True),
    RoundConfig("broad", "hybrid", 0.0, 10, 1.0, with_context=True),
)
#: Two results at least this good end the refinement early.
EARLY_STOP_SCORE = 0.85


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """Limits of the recall tools.

    ``rounds`` (1-5) search rounds of :data:`SEED_ROUNDS`; also the most searches in a row (at least
    ``MAX_CONSECUTIVE_SEARCHES``, three). ``max_results`` caps every search (1-10). ``plan`` may replace
    the rounds.
    ``default_min_score`` is the lowest score of a search whose caller did not set one.
    """

    rounds: int = 3
    max_results: int = MAX_RESULTS
    plan: tuple[RoundConfig, ...] = field(default=SEED_ROUNDS)
    #: ``min_relevance_score`` of a search whose caller gave none (``None``: the tool's own default).
    default_min_score: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or not 1 <= self.rounds <= 5:
            raise ValueError("rounds must be a whole number from 1 to 5")
        if not 1 <= self.max_results <= MAX_RESULTS:
            raise ValueError(f"max_results must be from 1 to {MAX_RESULTS}")
        if len(self.plan) < self.rounds:
            raise ValueError("the round plan has fewer rounds than rounds")
        object.__setattr__(self, "plan", tuple(self.plan[: self.rounds]))

    @property
    def max_consecutive_searches(self) -> int:
        """Searches allowed in a row: the rounds, and never fewer than three."""
        return max(MAX_CONSECUTIVE_SEARCHES, self.rounds)

    def round(self, number: int) -> RoundConfig:
        """Round ``number`` (1-based); past the plan, its last round."""
        return self.plan[min(max(number, 1), len(self.plan)) - 1]

    def round_timeout(self, number: int) -> float:
        """Time limit of search ``number`` in seconds."""
        return self.round(number).timeout_s
