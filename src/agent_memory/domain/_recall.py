"""The defaults and ranges of a recall run's options (``RecallOptions`` and the ``MEMORY_RECALL_*`` /
``MEMORY_CONTEXT_*`` settings that fill them); the per-user ones are ``data_layer.RECALL_BOUNDS``."""

from __future__ import annotations

from data_layer import Bound

#: ``window_size`` messages read first; ``max_iterations`` window expansions; ``time_budget_s`` for the
#: whole recall; ``slot_token_budget`` tokens of the recall block; ``history_token_budget`` tokens of
#: conversation sent to the main model.
RECALL_RUN_BOUNDS: dict[str, Bound] = {
    "window_size": Bound(5, ge=1, le=50),
    "max_iterations": Bound(3, ge=1, le=5),
    "time_budget_s": Bound(3.0, gt=0.0, le=120.0),
    "slot_token_budget": Bound(400, ge=20, le=8000),
    "history_token_budget": Bound(6000, ge=256, le=1_000_000),
}
