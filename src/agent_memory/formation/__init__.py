"""Chats become memories (passive session archiving), and what a user said is weighed.

>>> from agent_memory.formation import SessionArchiver, extract_statements, adjudicate
>>> report = await system.session_archiver.run(user_id="u1", friend_id="mentor", end_open=True)  # doctest: +SKIP

- sessions: a (user, AI friend) chat cut at idle gaps, a size, or an explicit end;
- event gists: dated, friend-scoped, extractive, linked to their source messages;
- profile items: the user's own explicit statements, shared by all friends; a newer statement
  supersedes an older one, which stays as history;
- statements and adjudication: self-statements in Chinese and English with their kind of speech
  (direct, quoted, hypothetical, reported, question) and the conflict rules.
"""

from ._adjudicate import (
    REASONS,
    ConflictCase,
    Reason,
    Verdict,
    adjudicate,
    load_conflict_set,
    score_conflicts,
)
from ._archiver import MAX_SKIPPED, ArchiveReport, SessionArchiver
from ._clauses import quotations_removed
from ._extract import Extracted, Extractor, ModelExtractor, OfflineExtractor
from ._gists import GistDraft, make_gists
from ._profiles import ProfileChange, ProfileWriter, profile_key
from ._sessions import Session, split_sessions
from ._statements import Polarity, Speech, Statement, extract_statements, statement_topics
from ._topics import QUESTION_ZH, TOPIC_CUES, TOPICS, topic_label

__all__ = [
    "MAX_SKIPPED",
    "QUESTION_ZH",
    "REASONS",
    "TOPICS",
    "TOPIC_CUES",
    "ArchiveReport",
    "ConflictCase",
    "Extracted",
    "Extractor",
    "GistDraft",
    "ModelExtractor",
    "OfflineExtractor",
    "Polarity",
    "ProfileChange",
    "ProfileWriter",
    "Reason",
    "Session",
    "SessionArchiver",
    "Speech",
    "Statement",
    "Verdict",
    "adjudicate",
    "extract_statements",
    "load_conflict_set",
    "make_gists",
    "profile_key",
    "quotations_removed",
    "score_conflicts",
    "split_sessions",
    "statement_topics",
    "topic_label",
]
