"""Conflict adjudication between self-statements, and the conflict set that measures it.

Statements are grouped by what they are about: ``(topic, subject)``, or the topic alone for single-valued
topics (a user has one employer, one city). In each group:

1. Only *direct statements by the user* can decide ("来源可信度", how far a source is believed: the user's own
   words beat an assistant's paraphrase; quoted, hypothetical and reported speech and questions are "语境误判").
2. Among them the newest wins ("时间变化": a later, explicit statement supersedes). A statement about
   the past (以前/"used to") counts as older than any present one, also within the same message; at the same
   moment, a statement that marks a change (现在/不再/"now"/"anymore") beats one that does not, and on a
   single-valued topic what holds beats what no longer does. A change of state (搬到/"moved to", 辞职/"quit
   my job", 结婚/"got married", 不再/"no longer") is such a statement: no rule of its own decides it.
3. If nothing direct is left, or two direct statements of the same moment disagree, the group cannot be
   decided: ``winner=None``, ``uncertain=True``, reason ``insufficient_evidence`` - both kept (不可裁决, undecidable):
   ``Verdict.kept`` (an extra field with a default) holds them - every statement of the group when none is
   direct, else the disagreeing newest direct ones (the rest are ``overruled`` with their reasons).

Every statement that disagrees with the winner is ``overruled`` with why: ``time_change`` for an older
direct statement, else the kind of speech that discounted it (``assistant_paraphrase`` for anything the
assistant said). Statements that agree with the winner are support, not losers. The verdict's ``reason``
is ``time_change`` when an older direct statement was overruled, else the reason of the newest overruled
statement, else ``agreement`` (no conflict: the evidence agrees, or there is a single direct statement).

"Disagree" means another polarity; for single-valued topics another value too, and for schedule another
clock time (7点起床 vs 9点起床).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args

from ._statements import Statement, extract_statements
from ._topics import is_single_valued, subject_key

Reason = Literal[
    "time_change",
    "quoted_speech",
    "hypothetical",
    "reported_speech",
    "assistant_paraphrase",
    "question",
    "agreement",
    "insufficient_evidence",
]
REASONS: tuple[Reason, ...] = get_args(Reason)
_CLOCK = re.compile(r"[0-9一二两三四五六七八九十半:]+|midnight|noon|[ap]m")


@dataclass(frozen=True, slots=True)
class Verdict:
    """The decision for one (topic, subject): the winning statement, the overruled ones and why."""

    topic: str
    subject: str
    winner: Statement | None
    overruled: tuple[tuple[Statement, Reason], ...]
    uncertain: bool
    reason: Reason
    kept: tuple[Statement, ...] = ()  # when uncertain: the statements kept side by side


def group_key(statement: Statement) -> tuple[str, str]:
    """What a statement is about: ``(topic, "")`` for single-valued topics, else ``(topic, subject key)``."""
    if statement.single_valued or is_single_valued(statement.topic):
        return statement.topic, ""
    return statement.topic, subject_key(statement.subject)


def fact_key(statement: Statement) -> tuple[str, ...]:
    """What a statement claims, for agreement: polarity, plus the value where the value is the claim."""
    if statement.single_valued:
        return statement.polarity, subject_key(statement.value).replace(" ", "")
    if statement.topic == "schedule":  # 7点起床 vs 9点起床 disagree; 夜猫子 vs "经常熬夜" agree
        return statement.polarity, "".join(_CLOCK.findall(statement.value.lower()))
    return (statement.polarity,)


def discount_reason(statement: Statement) -> Reason:
    """Why a statement cannot decide on its own (``time_change`` for a direct user statement)."""
    if statement.role != "user":
        return "assistant_paraphrase"
    by_speech: dict[str, Reason] = {
        "quoted": "quoted_speech",
        "hypothetical": "hypothetical",
        "reported": "reported_speech",
        "question": "question",
    }
    return by_speech.get(statement.speech, "time_change")


def precedence(statement: Statement) -> tuple[datetime, int, int, int]:
    """Newest last: time, then present over past, then a change marker over none, then - for a
    single-valued topic - what holds over what no longer does ("I no longer live in Paris, I live in
    Lille now": the user lives in Lille)."""
    holds = 0 if statement.single_valued and statement.polarity == "negative" else 1
    return statement.at, 0 if statement.past else 1, 1 if statement.change_marker else 0, holds


def adjudicate(statements: Sequence[Statement]) -> list[Verdict]:
    """Group by (topic, subject) - single-valued topics by topic alone - and decide each group.

    A direct user statement beats quoted/hypothetical/reported speech, questions and assistant
    paraphrases; among direct user statements the newer wins (``time_change``); if only non-direct
    evidence exists, or two direct statements of the same moment disagree, the verdict is uncertain
    (``insufficient_evidence``) and both are kept. Verdicts come in order of each group's first statement.
    """
    groups: dict[tuple[str, str], list[Statement]] = {}
    for statement in statements:
        groups.setdefault(group_key(statement), []).append(statement)
    return [_decide(topic, subject, group) for (topic, subject), group in groups.items()]


def _decide(topic: str, subject: str, group: list[Statement]) -> Verdict:
    label = "" if not subject else group[0].subject
    direct = [s for s in group if s.role == "user" and s.speech == "direct"]
    present = [s for s in direct if not s.past]
    if not present:  # nothing can decide: every statement is kept as evidence, none overruled
        return Verdict(topic, label, None, (), True, "insufficient_evidence", tuple(group))
    newest = max(precedence(s) for s in present)
    top = [s for s in present if precedence(s) == newest]
    if len({fact_key(s) for s in top}) > 1:  # the newest direct statements disagree: keep them all
        others = tuple((s, discount_reason(s)) for s in group if s not in top)
        return Verdict(topic, label, None, others, True, "insufficient_evidence", tuple(top))
    winner = top[-1]
    overruled = tuple((s, discount_reason(s)) for s in group if fact_key(s) != fact_key(winner))
    if any(reason == "time_change" for _, reason in overruled):
        reason: Reason = "time_change"
    elif overruled:
        reason = max(overruled, key=lambda item: precedence(item[0]))[1]
    else:
        reason = "agreement"
    return Verdict(topic, label, winner, overruled, False, reason)


# --- the conflict set --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConflictMessage:
    role: str
    content: str
    at: datetime


@dataclass(frozen=True, slots=True)
class ConflictCase:
    """One hand-written conflict: messages, the (topic, subject) asked about and the expected verdict."""

    id: str
    lang: str
    messages: tuple[ConflictMessage, ...]
    topic: str
    subject: str
    expected_value: str | None
    expected_uncertain: bool
    expected_reason: Reason
    kind: str = ""  # what the case tests (move, job, marriage, hypothetical ...); the expected reason when unnamed


def load_conflict_set(path: Path | str | None = None) -> list[ConflictCase]:
    """The conflict set shipped in the package (``data/conflicts.jsonl``), or one at ``path``."""
    if path is None:
        text = resources.files("agent_memory.formation").joinpath("data", "conflicts.jsonl").read_text("utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    cases = []
    for line in text.splitlines():
        if not line.strip():
            continue
        raw = json.loads(line)
        messages = tuple(
            ConflictMessage(m["role"], m["content"], datetime.fromisoformat(m["at"])) for m in raw["messages"]
        )
        expected = raw["expected"]
        if expected["reason"] not in REASONS:
            raise ValueError(f"case {raw['id']}: unknown reason {expected['reason']!r}")
        cases.append(
            ConflictCase(
                raw["id"],
                raw["lang"],
                messages,
                raw["topic"],
                raw.get("subject", ""),
                expected["value"],
                bool(expected["uncertain"]),
                expected["reason"],
                raw.get("kind") or expected["reason"],
            )
        )
    return cases


def verdict_for(case: ConflictCase) -> Verdict | None:
    """Extract statements from the case's messages (ids are positions) and return the verdict it asks about."""
    statements = [
        s
        for index, m in enumerate(case.messages)
        for s in extract_statements(m.content, role=m.role, at=m.at, message_id=index)
    ]
    wanted = (case.topic, "" if is_single_valued(case.topic) else subject_key(case.subject))
    return next((v for v in adjudicate(statements) if (v.topic, subject_key(v.subject)) == wanted), None)


def score_conflicts(cases: Iterable[ConflictCase]) -> dict[str, Any]:
    """Accuracy of the rules on the conflict set: a case is right when winner value, uncertainty and reason
    all match. Returns ``{"cases", "correct", "accuracy", "by_reason", "by_lang", "by_kind", "by_lang_kind",
    "failures"}``; ``by_lang_kind`` is keyed ``"<lang>/<kind>"`` (``"zh/move"``)."""
    total = correct = 0
    by: dict[str, dict[str, dict[str, int]]] = {"by_reason": {}, "by_lang": {}, "by_kind": {}, "by_lang_kind": {}}
    failures: list[dict[str, Any]] = []
    for case in cases:
        verdict = verdict_for(case)
        got = {
            "value": verdict.winner.value if verdict and verdict.winner else None,
            "uncertain": verdict.uncertain if verdict else None,
            "reason": verdict.reason if verdict else None,
        }
        expected = {"value": case.expected_value, "uncertain": case.expected_uncertain, "reason": case.expected_reason}
        ok = got == expected
        total += 1
        correct += ok
        kind = case.kind or case.expected_reason
        tallied: tuple[tuple[str, str], ...] = (
            ("by_reason", case.expected_reason),
            ("by_lang", case.lang),
            ("by_kind", kind),
            ("by_lang_kind", f"{case.lang}/{kind}"),
        )
        for table, key in tallied:
            cell = by[table].setdefault(key, {"cases": 0, "correct": 0})
            cell["cases"] += 1
            cell["correct"] += ok
        if not ok:
            failures.append({"id": case.id, "lang": case.lang, "kind": kind, "expected": expected, "got": got})
    result: dict[str, Any] = {
        "cases": total,
        "correct": correct,
        "accuracy": round(correct / total, 4) if total else 0.0,
    }
    for table, cells in by.items():
        result[table] = {k: {**c, "accuracy": round(c["correct"] / c["cases"], 4)} for k, c in sorted(cells.items())}
    result["failures"] = failures
    return result
