"""From evidence to a memory view: statements in the cited messages, conflicts adjudicated.

The recall agent decides what to read; this module decides what it means, the same way whichever
model drove the reading: each cited message is parsed into self-statements, statements about the
same thing are adjudicated (a newer explicit user statement wins; quoted, hypothetical or reported
speech, questions and assistant paraphrases lose), and each verdict becomes a view item that cites
its messages. Profile memories found by the search add what the messages did not say again.
"""

from __future__ import annotations

from collections.abc import Sequence

from data_layer import MemoryRecord, MessageRecord

from ..formation import Statement, Verdict, adjudicate, extract_statements
from ._recall_models import (
    ConflictNote,
    EvidenceItem,
    EvidenceRecall,
    Limits,
    MemoryView,
    OverruledEvidence,
    ViewItem,
)

#: Topics whose items are preferences; negative food and health statements are constraints.
PREFERENCE_TOPICS = frozenset({"interest", "diet", "schedule"})
CONSTRAINT_TOPICS = frozenset({"diet", "health"})


def _bucket(statement: Statement) -> str:
    if statement.topic in CONSTRAINT_TOPICS and statement.polarity == "negative":
        return "constraints"
    if statement.topic in PREFERENCE_TOPICS:
        return "preferences"
    return "profile"


def _ids(statements: Sequence[Statement]) -> list[int]:
    return [s.message_id for s in statements if s.message_id is not None]


def _items(verdict: Verdict) -> list[tuple[str, ViewItem]]:
    losers = [s for s, _ in verdict.overruled]
    if verdict.winner is not None and not verdict.uncertain:
        note = None
        if verdict.overruled:
            note = "；".join(f"#{s.message_id} {reason}" for s, reason in verdict.overruled)
        item = ViewItem(
            text=verdict.winner.value,
            topic=verdict.winner.topic_label,
            evidence_ids=list(dict.fromkeys(_ids([verdict.winner, *losers]))),
            note=note,
        )
        return [(_bucket(verdict.winner), item)]
    candidates = [verdict.winner] if verdict.winner is not None else []
    candidates += losers
    return [
        (
            _bucket(s),
            ViewItem(
                text=s.value,
                topic=s.topic_label,
                status="uncertain",
                evidence_ids=_ids([s]),
                note=f"证据不足以裁决: {verdict.reason}",
            ),
        )
        for s in candidates
    ]


def _conflict(verdict: Verdict) -> ConflictNote | None:
    if not verdict.overruled and not verdict.uncertain:
        return None
    return ConflictNote(
        topic=verdict.topic,
        subject=verdict.subject,
        winner_id=verdict.winner.message_id if verdict.winner is not None and not verdict.uncertain else None,
        uncertain=verdict.uncertain,
        reason=verdict.reason,
        overruled=[OverruledEvidence(message_id=s.message_id, reason=r) for s, r in verdict.overruled],
    )


def synthesize(
    messages: Sequence[MessageRecord],
    memories: Sequence[MemoryRecord],
    *,
    limits: Limits,
) -> EvidenceRecall:
    """The recall result for the cited ``messages`` (ranked, best first) and the ``memories`` found."""
    statements = [
        s for m in messages for s in extract_statements(m.content, role=m.role, at=m.created_at, message_id=m.id)
    ]
    view = MemoryView()
    conflicts = []
    covered: set[tuple[str, str]] = set()
    for verdict in adjudicate(statements):
        for bucket, item in _items(verdict):
            getattr(view, bucket).append(item)
        covered.add((verdict.topic, verdict.subject))
        note = _conflict(verdict)
        if note is not None:
            conflicts.append(note)
    for record in memories:
        meta = record.metadata
        if record.memory_type != "profile" or (meta.get("topic"), meta.get("subject", "")) in covered:
            continue
        ids = [i for i in meta.get("source_message_ids") or [] if isinstance(i, int)]
        view.profile.append(
            ViewItem(text=str(meta.get("value") or record.content), topic=meta.get("topic_label"), evidence_ids=ids)
        )
    evidence = [
        EvidenceItem(message_id=m.id, role=m.role, content=m.content[:500], created_at=m.created_at.isoformat())
        for m in {m.id: m for m in messages}.values()
    ]
    return EvidenceRecall(
        memory_view=view,
        evidence=evidence,
        limits=limits,
        memories=[r.memory_key for r in memories],
        conflicts=conflicts,
    )
