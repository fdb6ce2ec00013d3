"""The evidence recall's output: a memory view, the evidence messages, and the limits of what was read.

    {"memory_view": {"preferences": [...], "profile": [...], "constraints": [...]},
     "evidence": [{"message_id": 12, "role": "user", "content": "我不吃辣", "created_at": "..."}],
     "limits": {"time_range": {"since": "...", "until": null}, "role": "user", "messages_considered": 37}}

Every view item cites the message ids it rests on; a conflict keeps both sides with the reason the
loser lost (``conflicts``), and an undecidable one marks the item ``uncertain``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

ViewStatus = Literal["current", "uncertain"]


class ViewItem(BaseModel):
    """One thing the recall concluded about the user."""

    text: str
    topic: str | None = None
    status: ViewStatus = "current"
    evidence_ids: list[int] = Field(default_factory=list)
    note: str | None = None


class MemoryView(BaseModel):
    """What the user prefers, who they are, and what must (not) be done."""

    preferences: list[ViewItem] = Field(default_factory=list)
    profile: list[ViewItem] = Field(default_factory=list)
    constraints: list[ViewItem] = Field(default_factory=list)


class EvidenceItem(BaseModel):
    """A message cited as evidence (content cut to 500 characters)."""

    message_id: int
    role: str
    content: str
    created_at: str


class TimeWindow(BaseModel):
    """The time range the recall read (``None``: unbounded)."""

    since: str | None = None
    until: str | None = None


class Limits(BaseModel):
    """What the recall covered."""

    time_range: TimeWindow = Field(default_factory=TimeWindow)
    role: str = "any"
    messages_considered: int = 0


class OverruledEvidence(BaseModel):
    """A message that lost a conflict, and why."""

    message_id: int | None
    reason: str


class ConflictNote(BaseModel):
    """How a conflict between pieces of evidence was decided."""

    topic: str
    subject: str
    winner_id: int | None
    uncertain: bool
    reason: str
    overruled: list[OverruledEvidence] = Field(default_factory=list)


class EvidenceRecall(BaseModel):
    """The evidence-mode recall result (what the chat says, with its message ids), plus the memories and
    conflicts behind it."""

    memory_view: MemoryView = Field(default_factory=MemoryView)
    evidence: list[EvidenceItem] = Field(default_factory=list)
    limits: Limits = Field(default_factory=Limits)
    memories: list[str] = Field(default_factory=list, description="keys of the memories used, best first")
    conflicts: list[ConflictNote] = Field(default_factory=list)
