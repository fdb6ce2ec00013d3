"""Clause analysis for :mod:`._statements`: normalise a message, split it into sentences and clauses.

Each clause gets a speech kind (direct, quoted, hypothetical, reported, question), the subject pronouns
it may use (我/I for the user, 你/you for the assistant) and its change/past markers; the rules in
:mod:`._rules` then run over every :class:`Clause`. Kept apart from the rules because it decides *how*
something was said, not *what* was said (see the :mod:`._statements` docstring for the speech kinds).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..domain import ends_as_question
from . import _topics as T

if TYPE_CHECKING:
    from ._statements import Speech


@dataclass(frozen=True, slots=True)
class Clause:
    """A clause to run the rules on: its text, language, speech kind and the allowed subject pronouns."""

    text: str
    lang: Literal["zh", "en"]
    speech: Speech
    subjects: frozenset[str]
    change: bool
    past: bool


# --- normalisation ---------------------------------------------------------------------------------

_CONTRACTIONS = (
    (re.compile(r"\b(can)'t\b", re.I), r"\1 not"),
    (re.compile(r"\b(w)on't\b", re.I), r"\1ill not"),
    (re.compile(r"n't\b", re.I), " not"),
    (re.compile(r"\b(i)'m\b", re.I), r"\1 am"),
    (re.compile(r"'re\b", re.I), " are"),
    (re.compile(r"'ve\b", re.I), " have"),
    (re.compile(r"'d\b", re.I), " would"),
    (re.compile(r"'ll\b", re.I), " will"),
    (re.compile(r"\b(he|she|it|that|there)'s\b", re.I), r"\1 is"),
    (re.compile(r"\bcannot\b", re.I), "can not"),
)


def prepare(text: str) -> str:
    """NFKC-normalise (full-width punctuation becomes ASCII), unify apostrophes, expand contractions."""
    text = unicodedata.normalize("NFKC", text).replace("’", "'").replace("‘", "'")
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return text


# --- sentences, clauses and speech -----------------------------------------------------------------

_QUOTE = re.compile(r"“([^”\n]{1,300})”|\"([^\"\n]{1,300})\"|「([^」\n]{1,300})」|『([^』\n]{1,300})』")
_PERSON_IN_QUOTE = re.compile(r"[我你]|\b(?:i|my|you|your)\b", re.I)
_SENTENCE = re.compile(r"[^。!?;\n]{1,4000}[。!?;\n]{0,8}")
_CLAUSE_SPLIT = re.compile(
    r"[,、]|(?<!\d):|:(?!\d)|(?<!不)(?=但是|可是|不过|然而)|\s(?=but\s|though\s|although\s|whereas\s)", re.I
)
_INVERTED = re.compile(r"^(\s*(?:am|do|does|did|have|has|can|could|should|would|will))\s+(i|you)\b", re.I)
_ASSISTANT = frozenset({"你", "you"})
_USER = frozenset({"我", "i"})
_THIRD = frozenset({"他", "她", "ta", "he", "she", "they"})


def _quotes(text: str) -> tuple[str, list[str]]:
    """Take out quotations that hold a person (他说“我不吃辣”); unwrap the rest (我喜欢“三体”)."""
    inner: list[str] = []

    def swap(match: re.Match[str]) -> str:
        content = next(g for g in match.groups() if g is not None)
        if _PERSON_IN_QUOTE.search(content):
            inner.append(content)
            return "“”"
        return content

    return _QUOTE.sub(swap, text), inner


def quotations_removed(text: str) -> str:
    """``text`` normalised (:func:`prepare`) without the quotations that hold a person (someone's
    speech: 他说“我不吃辣”), other quotation marks unwrapped: what the speaker says in their own voice."""
    return _quotes(prepare(text))[0]


def _sentences(text: str, role: str) -> Iterator[tuple[str, list[Clause]]]:
    outer, quoted = _quotes(text)
    outer = re.sub(r"\.(?=\s|$)", ".\n", outer)
    for piece, in_quote in [(outer, False), *((q, True) for q in quoted)]:
        for match in _SENTENCE.finditer(piece):
            sentence = match.group(0)
            if sentence.strip(" \n。.!?;"):
                yield sentence, list(_clauses(sentence, role=role, quoted=in_quote))


def _clauses(sentence: str, *, role: str, quoted: bool) -> Iterator[Clause]:
    """Split a sentence into clauses and give each its speech kind and allowed subjects."""
    lang: Literal["zh", "en"] = "zh" if T.CJK.search(sentence) else "en"
    body = sentence.rstrip(" \n。.!?;")
    is_question = ends_as_question(sentence, trailing=" \n")
    tag = T.TAG.search(body)
    if tag is not None:
        body = body[: tag.start()]
        is_question = role == "user"  # "你喜欢X对吧" by the assistant is a paraphrase, by the user a question
    parts = [p for p in _CLAUSE_SPLIT.split(body) if p and p.strip()]
    hyp = rep = False
    for index, part in enumerate(parts):
        if T.CONTRAST.search(part):
            hyp = rep = False
        hyp = hyp or bool((T.HYP_ZH if lang == "zh" else T.HYP_EN).search(part))
        segments = [part]
        report_at = _report_split(part, lang)
        if report_at is not None:
            segments = [part[: report_at[0]], part[report_at[1] :]]
        for number, segment in enumerate(segments):
            if number == 1:
                rep = True
                segment = re.sub(r"^\s*that\b", "", segment, flags=re.I)
            question = _is_question(segment, lang, last=index == len(parts) - 1, is_question=is_question)
            if question and lang == "en":  # "Am I vegan?" -> "I am vegan?": the rules read declarative order
                segment = _INVERTED.sub(r"\2 \1", segment)
            yield _clause(segment, lang=lang, role=role, quoted=quoted, hyp=hyp, rep=rep, question=question)
        if report_at is not None and part[report_at[1] :].strip(" 过了"):
            rep = False  # the report was complete in its clause (他说她不吃香菜); "他说，…" carries on


def _report_split(part: str, lang: str) -> tuple[int, int] | None:
    """Where someone other than the speaker starts reporting (我朋友说 / "my friend says"), if anywhere."""
    match = (T.REPORT_ZH if lang == "zh" else T.REPORT_EN).search(part)
    if match is None:
        return None
    prefix = part[: match.start()].strip()
    if lang == "zh":
        if match.group(0) in ("听说", "据说"):
            return match.start(), match.end()
        if not prefix or (prefix.startswith("我") and not T.KIN_ZH.search(prefix)):
            return None
    else:
        words = prefix.lower().split()
        if not words or words[0] in ("i", "we"):
            return None
    return match.start(), match.end()


def _is_question(segment: str, lang: str, *, last: bool, is_question: bool) -> bool:
    if lang == "en":
        return is_question or bool(T.QUESTION_EN.search(segment))
    return (is_question and last) or bool(T.QUESTION_ZH.search(segment))


def _clause(
    segment: str, *, lang: Literal["zh", "en"], role: str, quoted: bool, hyp: bool, rep: bool, question: bool
) -> Clause:
    speech: Speech
    if quoted:
        speech = "quoted"
    elif hyp:
        speech = "hypothetical"
    elif question:
        speech = "question"
    elif rep or role == "assistant":
        speech = "reported"
    else:
        speech = "direct"
    if role == "assistant":
        subjects = _USER if quoted else _ASSISTANT
    elif quoted:
        subjects = _USER | _ASSISTANT  # 我妈总说“你要多吃辣”: inside a quotation “你” is the user being addressed
    else:
        subjects = _USER | _THIRD if rep else _USER
    change = bool((T.CHANGE_ZH if lang == "zh" else T.CHANGE_EN).search(segment))
    past = bool((T.PAST_ZH if lang == "zh" else T.PAST_EN).search(segment))
    return Clause(segment, lang, speech, subjects, change, past)
