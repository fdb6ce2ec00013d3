"""The error of a sensitive memory kept from a slot (the rule and the gate: ``agent_memory.domain.reach``)."""

from __future__ import annotations

from ._placeholders import PlaceholderError


class SensitiveMemoryError(PlaceholderError):
    """A sensitive memory was about to reach a friend or a slot it does not belong to."""
