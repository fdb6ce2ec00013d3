"""``RecallOptions``: how a MemoryContext runs recall and bounds what it sends (from the settings)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..domain import RECALL_RUN_BOUNDS

InjectionMode = Literal["system", "tool_call"]
#: The share of the recall's time budget a recall model may use.
MODEL_SHARE = 0.7


class RecallOptions(BaseModel):
    """Options of one MemoryContext; every field has the range its setting allows.

    ``window_size`` messages the recall agent reads first; ``max_iterations`` window expansions;
    ``time_budget_s`` for the whole recall; ``slot_token_budget`` tokens of the recall block;
    ``history_token_budget`` tokens of conversation sent to the main model (oldest turns dropped);
    ``injection``: ``system`` (one system message in front) or ``tool_call`` (a simulated
    ``recall_memory`` call and its result right after the user's message).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    window_size: int = RECALL_RUN_BOUNDS["window_size"].field()
    max_iterations: int = RECALL_RUN_BOUNDS["max_iterations"].field()
    time_budget_s: float = RECALL_RUN_BOUNDS["time_budget_s"].field()
    slot_token_budget: int = RECALL_RUN_BOUNDS["slot_token_budget"].field()
    history_token_budget: int = RECALL_RUN_BOUNDS["history_token_budget"].field()
    injection: InjectionMode = "system"

    @property
    def model_time_budget_s(self) -> float:
        """The share of ``time_budget_s`` a recall model may use (70 %): its request is cancelled then, so
        the recall still ends within its budget with what was found, and a one-slot server is freed."""
        return round(self.time_budget_s * MODEL_SHARE, 3)

    @property
    def message_token_limit(self) -> int:
        """The most tokens (:func:`estimate_tokens`) one user message may take: half of
        ``history_token_budget``, so the recall block, earlier turns and the reply keep room."""
        return self.history_token_budget // 2
