"""Chat messages -> typed self-statements (offline rules, Chinese and English).

A statement is what a message says about the user: a topic (diet, employer, ...), the subject it is
about ("辣", "sci-fi movies"), a display value ("不吃辣", "works at Google"), a polarity and - the part
that matters for conflict adjudication (seed 003 §4.6) - *how* it was said:

- ``direct``: the user's own explicit statement (the only kind that may change a profile);
- ``quoted``: words inside quotation marks (“...”, "...", 「...」) that hold a first-person clause;
- ``hypothetical``: from a conditional or plan marker (如果/要是/打算, "if"/"would"/"planning to") to the
  end of the sentence, or until a contrast word (但是, "but") starts a new clause;
- ``reported``: after someone else's reporting verb (我朋友说/他觉得, "my friend says"), where he/she are
  accepted as the grammatical subject, and every statement by the assistant about "你"/"you" (a
  paraphrase of the user: "你说过你不吃辣", "you mentioned you like X", "你喜欢X对吧");
- ``question``: clauses with 吗/A-不-A or ending in "?" (a tag question by the assistant stays reported).

How it works: NFKC-normalise and cap the text (:data:`MAX_CHARS`), expand English contractions, take out
first-person quotations, split into sentences and clauses, give each clause a speech kind and the subjects
it may use (我/I for the user, 你/you for the assistant), then run the rules below over it.
Every regex is linear-time: no nested unbounded quantifiers, every free span is bounded ({1,24}).
A clause that says ``以前``/"used to" yields ``past=True`` statements; ``现在``/``开始``/"now"/"anymore"
set ``change_marker``. Both help adjudication order statements made in the same message.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Literal

from ..text import zh_number
from . import _topics as T
from ._topics import is_single_valued, subject_key, topic_label

Polarity = Literal["positive", "negative", "neutral"]
Speech = Literal["direct", "quoted", "hypothetical", "reported", "question"]

#: Only the first MAX_CHARS characters of a message are read (bounds the work on pasted documents).
MAX_CHARS = 4000


@dataclass(frozen=True, slots=True)
class Statement:
    """One self-statement found in a message (see the module docstring for ``speech``)."""

    topic: str
    topic_label: str
    subject: str
    value: str
    polarity: Polarity
    speech: Speech
    role: str
    message_id: int | None
    at: datetime
    text: str
    single_valued: bool
    change_marker: bool = False  # 现在/开始/不再/"now"/"anymore": the speaker says something changed
    past: bool = False  # 以前/曾经/"used to"/"I worked": about an earlier state, not the current one


@dataclass(frozen=True, slots=True)
class Draft:
    """What a rule found in a clause, before speech, role and time are attached."""

    topic: str
    subject: str
    value: str
    polarity: Polarity
    change: bool = False
    past: bool = False


@dataclass(frozen=True, slots=True)
class Clause:
    """A clause to run the rules on: its text, language, speech kind and the allowed subject pronouns."""

    text: str
    lang: Literal["zh", "en"]
    speech: Speech
    subjects: frozenset[str]
    change: bool
    past: bool


def extract_statements(text: str, *, role: str, at: datetime, message_id: int | None = None) -> list[Statement]:
    """The self-statements in one message, in reading order, at most one per (topic, subject) and speech.

    ``role`` is who said it (``user`` or ``assistant``); ``at`` the message time (timezone-aware).
    Assistant messages only yield statements about the user ("你..."/"you..."), as paraphrases.
    """
    out: list[Statement] = []
    seen: set[tuple[str, str, str, str]] = set()
    previous: Draft | None = None
    for sentence, clauses in _sentences(prepare(text[:MAX_CHARS]), role):
        previous = None  # pronoun objects ("I can't handle it", 它) refer back within a sentence only
        for clause in clauses:
            for draft in run_rules(clause, previous):
                previous = draft
                key = (draft.topic, subject_key(draft.subject), draft.polarity, clause.speech)
                if key in seen:
                    continue
                seen.add(key)
                single = is_single_valued(draft.topic)
                out.append(
                    Statement(
                        topic=draft.topic,
                        topic_label=topic_label(draft.topic, clause.lang),
                        subject="" if single else draft.subject,
                        value=draft.value,
                        polarity=draft.polarity,
                        speech=clause.speech,
                        role=role,
                        message_id=message_id,
                        at=at,
                        text=sentence.strip()[:500],
                        single_valued=single,
                        change_marker=draft.change or clause.change,
                        past=(draft.past or clause.past) and not clause.change,
                    )
                )
    return out


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
    is_question = sentence.rstrip(" \n").endswith(("?", "？"))
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


def _clause(segment: str, *, lang: Literal["zh", "en"], role: str, quoted: bool, hyp: bool, rep: bool,
            question: bool) -> Clause:  # fmt: skip
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


# --- rule handlers: a regex match in a clause -> drafts ---------------------------------------------

_PRONOUN_OBJECTS = frozenset({"它", "这个", "那个", "it", "them", "that"})
_POSSESSIVE = {"my": "i", "your": "you", "his": "he", "her": "she", "call me": "i"}
_ZH_TAIL = re.compile(r"因为|所以|而且|然后|但是|的话|的时候|之后|以后|了|啦|呢|吗|吧|啊|呀|哦|哈|嘛|哟|耶|!")
_ZH_SPLIT = re.compile(r"和|跟|与|、|还有|以及|或者|或|及")
_ZH_PLACE_STOP = re.compile(
    r"快|已经|有|都|也|就|还|和|跟|了|的|工作|上班|生活|住|[0-9一二两三四五六七八九十几半]+(?:年|个月|天|周)"
)
_EN_SPLIT = re.compile(r"\s(?:and|or)\s|&")
_EN_GERUND = re.compile(r"^(?:to |watching |playing |listening to |reading |doing |going to )", re.I)
_EN_QUANTITY = re.compile(r"^(?:more|less|some|any|a lot of|lots of|much|too much) ", re.I)
_NEGATORS_EN = re.compile(r"\b(?:not|never|no longer|no)\b", re.I)
_EN_TIME = re.compile(
    r"\b(?:at|around|by|before|after|about)\s(\d{1,2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?|midnight|noon)", re.I
)


def run_rules(clause: Clause, previous: Draft | None) -> list[Draft]:
    """Every rule over the clause; a Chinese clause without a subject (现在不吃了) borrows the speaker's."""
    drafts = _apply(clause.text, clause, previous)
    text = T.CONTRAST.sub("", clause.text).lstrip()
    if (
        not drafts
        and clause.lang == "zh"
        and not re.match(r"[我你他她]", text)
        and (previous or T.ZERO_SUBJECT.match(text))
    ):
        pronoun = "我" if "我" in clause.subjects else "你"
        drafts = _apply(pronoun + text, clause, previous)
    return drafts


def _apply(text: str, clause: Clause, previous: Draft | None) -> list[Draft]:
    found: dict[tuple[str, str], Draft] = {}
    for kind, pattern in T.RULES[clause.lang]:
        for match in pattern.finditer(text):
            subj = match.group("subj").lower()
            if _POSSESSIVE.get(subj, subj) not in clause.subjects:
                continue
            handler = _HANDLERS_ZH[kind] if clause.lang == "zh" else _HANDLERS_EN[kind]
            for draft in handler(match, previous, clause):
                found.setdefault((draft.topic, subject_key(draft.subject)), draft)
                previous = draft
    return list(found.values())


def _g(match: re.Match[str], name: str) -> str:
    return (match.groupdict().get(name) or "").strip()


def _negated(match: re.Match[str]) -> bool:
    if _g(match, "neg") or _g(match, "neg2"):
        return True
    return bool(_NEGATORS_EN.search(_g(match, "adv") + " " + _g(match, "num")))


def _pol(negative: bool) -> Polarity:
    return "negative" if negative else "positive"


def _clean_zh(obj: str) -> str:
    cut = _ZH_TAIL.search(obj)
    return (obj[: cut.start()] if cut else obj).strip(" 的")


def _clean_en(obj: str, limit: int = 5) -> str:
    words: list[str] = []
    for word in obj.strip(" '\"").split():
        bare = word.lower().strip("'\"")
        if bare in T.EN_STOP_WORDS and not (not words and bare in ("a", "an", "the")):
            break
        words.append(word.strip("'\""))
        if len(words) >= limit:
            break
    return " ".join(words)


_HEAD = re.compile(r"(?:类的|类|的)?(电影|影片|片子|小说|书|音乐|歌|游戏|运动|电视剧|剧|动漫|菜|食物|水果)$")


def _share_head(pieces: list[str]) -> list[str]:
    """ "科幻和悬疑类的电影": the last part's head noun belongs to every part (科幻电影, 悬疑电影)."""
    found = _HEAD.search(pieces[-1]) if len(pieces) > 1 and pieces[-1] else None
    if found is None:
        return pieces
    head = found.group(1)
    out = [p if not p or _HEAD.search(p) else p + head for p in pieces[:-1]]
    return [*out, pieces[-1][: found.start()] + head]


def _parts(obj: str, lang: str, previous: Draft | None) -> list[tuple[str, Draft | None]]:
    """Split "科幻和悬疑" / "sci-fi and horror" into parts; a pronoun part points back to ``previous``."""
    if lang == "zh":
        pieces = [_clean_zh(p) for p in _ZH_SPLIT.split(_clean_zh(obj))] if obj else [""]
        pieces = _share_head(pieces)
    else:
        pieces = [_clean_en(_EN_QUANTITY.sub("", p.strip())) for p in _EN_SPLIT.split(obj)]
    out: list[tuple[str, Draft | None]] = []
    for piece in pieces:
        key = subject_key(piece)
        if (key in _PRONOUN_OBJECTS or not key) and previous is not None and previous.topic in ("diet", "interest"):
            out.append((previous.subject, previous))
        elif (
            key and key not in T.NON_SUBJECTS and key.split()[0] not in T.NON_SUBJECTS and key[0] not in "你他她它这那"
        ):
            out.append((piece, None))
    return out


def _like(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str) -> list[Draft]:
    verb = _g(m, "verb").lower()
    if lang == "zh" and _g(m, "obj").startswith("的"):
        return []  # 我喜欢的电影是…: a relative clause, not an object
    if verb in ("stand", "bear") and "not" not in _g(m, "adv").lower():
        return []
    negative_verb = verb in ("讨厌", "厌恶", "反感", "受不了", "怕", "hate", "hates", "hated", "dislike", "dislikes",
                             "detest", "detests")  # fmt: skip
    negated = _negated(m)
    drafts = []
    for part, ref in _parts(_g(m, "obj"), lang, previous):
        if lang == "zh" and part in T.SCHEDULE_ZH:  # 我讨厌早起: a habit, not a hobby
            subject, word = T.SCHEDULE_ZH[part], "讨厌" if negative_verb else "喜欢"
            drafts.append(
                Draft("schedule", subject, f"{'不' if negated else ''}{word}{part}", _pol(negative_verb != negated))
            )
            continue
        if lang == "zh":
            bare = part[1:] if part[:1] in ("吃", "喝") else part
            food = T.food_zh(bare) if ref is None else (ref.subject if ref.topic == "diet" else None)
            if food is None and (verb == "怕" or bare != part):
                continue
            subject = food or (part[1:] if part[:1] in "看听玩读打弹学逛" and len(part) >= 3 else part)
            word = {"讨厌": "讨厌", "厌恶": "讨厌", "反感": "讨厌", "受不了": "受不了", "怕": "怕"}.get(verb, "喜欢")
            value = (
                f"{'不' if negated else ''}{word}{part}"
                if "兴趣" not in verb
                else f"对{part}{'不' if negated else ''}感兴趣"
            )
        else:
            low = part.lower()
            bare = re.sub(r"^(?:eating|to eat|drinking|to drink) ", "", low)
            food = T.food_en(bare) if ref is None else (ref.subject if ref.topic == "diet" else None)
            if food is None and bare != low:
                continue
            subject = food or _EN_GERUND.sub("", low) or low
            if verb in ("stand", "bear"):
                value = f"cannot stand {part}"
            elif negative_verb:
                value = f"{'does not dislike' if negated else 'dislikes'} {part}"
            else:
                value = f"{'does not like' if negated else 'likes'} {part}"
        past = verb.endswith("ed") and verb != "interested" and not re.search(r"\b(?:have|has|never)\b", _g(m, "adv"))
        topic = "diet" if food else "interest"
        drafts.append(Draft(topic, subject, value, _pol(negative_verb != negated), past=past))
    return drafts


def _diet(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str) -> list[Draft]:
    negated, verb, obj = _negated(m), _g(m, "verb").lower(), _g(m, "obj")
    if lang == "zh":
        if obj.startswith(("了", "过")) and len(obj) > 1:
            return []  # 我吃了火锅: an event, not a habit
        habitual = negated or _g(m, "modal") or _g(m, "adv") or clause.speech != "direct"
        verb = "喝" if verb == "喝" else "吃"
    else:
        habit = re.search(r"\b(?:again|every day|daily|a lot|all the time|regularly)\b", obj, re.I)
        habitual = negated or habit or _g(m, "adv") or clause.speech != "direct"
        verb = "drink" if verb.startswith(("drink", "drank")) else "eat"
        if not obj and verb == "drink" and negated:
            obj = "alcohol"
    drafts = []
    for part, ref in _parts(obj, lang, previous):
        food = (
            (ref.subject if ref.topic == "diet" else None)
            if ref
            else (T.food_zh(part) if lang == "zh" else T.food_en(part))
        )
        if food is None or not habitual:
            continue
        if lang == "zh":
            value = f"{'不' if negated else ''}{verb}{food}"
        else:
            value = f"{'does not ' + verb if negated else verb + 's'} {food}"
        drafts.append(Draft("diet", food, value, _pol(negated)))
    return drafts


def _veg(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str) -> list[Draft]:
    negated = _negated(m)
    if lang == "zh":
        return [Draft("diet", "肉", "不再吃素" if negated else "吃素", _pol(not negated))]
    kind = _g(m, "obj").lower()
    return [Draft("diet", "meat", f"is {'no longer ' if negated else ''}{kind}", _pol(not negated))]


def _quit(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str) -> list[Draft]:
    drafts = []
    obj = re.sub(r"^(?:eating|drinking) ", "", _g(m, "obj"), flags=re.I)
    for part, ref in _parts(obj, lang, previous):
        key = subject_key(part)
        if (key in T.SMOKING_ZH or key.startswith("烟")) if lang == "zh" else key in T.SMOKING_EN:
            subject = "吸烟" if lang == "zh" else "smoking"
            drafts.append(Draft("health", subject, "戒烟" if lang == "zh" else "quit smoking", "negative", change=True))
            continue
        food = (
            (ref.subject if ref and ref.topic == "diet" else None)
            if ref
            else (T.food_zh(part) if lang == "zh" else T.food_en(part))
        )
        if food is not None:
            value = f"戒了{food}" if lang == "zh" else f"{'avoids' if 'avoid' in _g(m, 'verb') else 'gave up'} {food}"
            drafts.append(Draft("diet", food, value, "negative", change=True))
    return drafts


def _allergy(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str) -> list[Draft]:
    negated = _negated(m)
    obj = _clean_zh(_g(m, "obj")) if lang == "zh" else _clean_en(_g(m, "obj"), 3)
    if not obj or subject_key(obj) in T.NON_SUBJECTS:
        return []
    food = T.food_zh(obj) if lang == "zh" else T.food_en(obj)
    if lang == "zh":
        value = f"{'不再' if negated else ''}对{obj}过敏"
    else:
        value = f"is {'not ' if negated else ''}allergic to {obj}"
    if food is not None:
        return [Draft("diet", food, value, _pol(not negated))]
    return [Draft("health", f"{obj}过敏" if lang == "zh" else f"{subject_key(obj)} allergy", value, _pol(negated))]


def _is_place_zh(obj: str) -> bool:
    return obj in T.CITIES_ZH or obj.endswith(T.PLACE_SUFFIX_ZH) or obj.startswith(("这", "那", "家"))


def _employer(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str, kind: str) -> list[Draft]:
    negated = _negated(m)
    if lang == "zh":
        obj = _clean_zh(_g(m, "obj")).removesuffix("那边").removesuffix("这边")
        if kind == "jobmove" and _g(m, "verb") in ("去", "到") and _g(m, "tail") not in ("工作", "上班"):
            return []
        if not obj or _is_place_zh(obj) or subject_key(obj) in T.NON_SUBJECTS or re.search(r"公司上|办公|工位", obj):
            return []
        if kind == "leave":
            return [Draft("employer", obj, f"从{obj}离职", "negative", change=True)]
        value = f"{'不' if negated else ''}在{obj}{'实习' if _g(m, 'verb') == '实习' else '工作'}"
        return [Draft("employer", obj, value, _pol(negated), change=kind == "jobmove", past=bool(_g(m, "past")))]
    obj = _clean_en(_g(m, "obj"))
    if not obj or obj.lower() in T.EN_NOT_EMPLOYERS or subject_key(obj).split()[0] in T.NON_SUBJECTS:
        return []
    if kind in ("join", "leave") and not obj[0].isupper():
        return []
    if kind == "leave":
        return [Draft("employer", obj, f"left {obj}", "negative", change=True)]
    verb = _g(m, "verb").lower()
    value = f"{'no longer works' if negated else 'works'} at {obj}"
    change = kind == "join" or verb.startswith(("got", "started", "took"))
    return [Draft("employer", obj, value, _pol(negated), change=change, past=verb == "worked")]


def _occupation(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str, kind: str) -> list[Draft]:
    negated, obj, adv = _negated(m), _g(m, "obj"), _g(m, "adv") + _g(m, "neg") + _g(m, "neg2")
    if negated and not re.search(r"不再|已经|no longer|anymore|now", adv + " " + m.string, re.I):
        return []  # "我不是医生" / "I'm not a doctor, but..." is a hedge, not a change of job
    if kind == "retired":
        return [Draft("occupation", "", "退休" if lang == "zh" else "retired", "positive", change=True)]
    if lang == "zh":
        obj = re.sub(r"^[0-9一两二三四五六七八九十几]+年", "", obj)
        value = f"做{obj}的" if kind == "occupation2" else obj
        return [Draft("occupation", "", f"不再是{value}" if negated else value, _pol(negated))]
    verb = _g(m, "verb").lower()
    return [
        Draft(
            "occupation", "", f"no longer a {obj}" if negated else obj, _pol(negated), past=verb in ("was", "worked as")
        )
    ]


def _residence(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str) -> list[Draft]:
    negated, verb = _negated(m), _g(m, "verb").lower()
    if lang == "zh":
        obj = _g(m, "obj")
        city = next((c for c in T.CITIES_ZH if obj.startswith(c) and len(c) > 1), "")  # 成都 is not 成 + 都
        cut = _ZH_PLACE_STOP.search(obj, len(city))
        place = (obj[: cut.start()] if cut else obj).strip()
        if not place or re.search(r"公司|办公|工位|座位|部门|组|院", place) or place[0] in "这那你他她":
            return []
        value = f"{'不再' if negated else ''}住在{place}"
        return [Draft("residence", place, value, _pol(negated), change=verb.startswith("搬"))]
    place = _clean_en(_g(m, "obj"), 4)
    if not place or not place[0].isupper():
        return []  # "I live in a small flat", "moved to the next level": only named places
    value = f"{'no longer lives' if negated else 'lives'} in {place}"
    return [Draft("residence", place, value, _pol(negated), change=verb.startswith("move") or verb.startswith("reloc"),
                  past=verb == "lived")]  # fmt: skip


def _schedule(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str, kind: str) -> list[Draft]:
    negated, verb = _negated(m), _g(m, "verb").lower()
    if lang == "zh":
        subject = T.SCHEDULE_ZH[verb]
        if kind == "schedule":
            return [Draft("schedule", subject, f"{_g(m, 'time')}{subject}", "positive")]
        return [Draft("schedule", subject, f"{'不' if negated else ''}{verb}", _pol(negated))]
    subject = next((v for k, v in T.SCHEDULE_EN.items() if k in verb), "bedtime")
    if kind == "habit":
        phrase = (
            f"{'is not' if negated else 'is'} {verb}"
            if verb.startswith("a")
            else f"{'does not ' if negated else ''}{verb}"
        )
        return [Draft("schedule", subject, phrase, _pol(negated))]
    time = _EN_TIME.search(_g(m, "obj"))
    if time is None:
        return []
    phrase = "wakes up" if subject == "waking up" else "goes to bed"
    return [Draft("schedule", subject, f"{phrase} at {time.group(1).lower()}", "positive")]


def _family(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str, kind: str) -> list[Draft]:
    negated = _negated(m) and kind == "family"
    obj, num, verb = _g(m, "obj").lower(), _g(m, "num"), _g(m, "verb").lower()
    if lang == "zh":
        subject = T.FAMILY_ZH[obj]
        has = "养了" if verb.startswith("养") or (kind == "possessive" and subject in T.PETS) else "有"
        value = f"没有{obj}" if negated else f"{has}{num}{obj}"
    else:
        subject = T.FAMILY_EN[obj]
        article = "" if obj.endswith(("s", "children")) else "a "
        value = f"does not have {obj}" if negated else f"has {num} {obj}" if num else f"has {article}{obj}"
    return [Draft("family", subject, value, _pol(negated), past=verb == "had")]


def _name(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str) -> list[Draft]:
    obj = _g(m, "obj")
    if lang == "zh":
        obj = re.split(r"今年|是|在|来自|的|也|就|哦|啊|呀|了|吧", obj)[0]
        if not obj or obj[0] in "了他她你它我" or obj in ("外卖", "车", "什么", "醒", "人"):
            return []
        return [Draft("name", "", obj, "positive")]
    words = [w for w in _clean_en(obj, 3).split() if w.lower() not in ("i", "im")]
    return [Draft("name", "", " ".join(words), "positive")] if words else []


def _age(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str) -> list[Draft]:
    raw, verb = _g(m, "n"), _g(m, "verb").lower()
    if _g(m, "tail") or (lang == "en" and not _g(m, "unit") and "turned" not in verb):
        return []  # 我5岁的时候 / "I am 30" (30 what?)
    years = int(raw) if raw.isdigit() else zh_number(raw)
    if years is None or not 1 <= years <= 120:
        return []
    value = f"{years}岁" if lang == "zh" else f"{years} years old"
    return [Draft("age", "", value, "positive", past=verb == "was")]


def _health(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str) -> list[Draft]:
    negated, obj = _negated(m), _g(m, "obj")
    subject = obj if lang == "zh" else T.HEALTH_EN[obj.lower()]
    value = (f"没有{obj}" if negated else obj) if lang == "zh" else f"{'does not have' if negated else 'has'} {subject}"
    return [Draft("health", subject, value, _pol(negated))]


def _smoke(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str) -> list[Draft]:
    negated, verb = _negated(m), _g(m, "verb").lower()
    if lang == "zh":
        return [Draft("health", "吸烟", f"{'不' if negated else ''}抽烟", _pol(negated))]
    return [Draft("health", "smoking", "does not smoke" if negated else "smokes", _pol(negated), past=verb == "smoked")]


_Handler = Callable[[re.Match[str], "Draft | None", Clause], list[Draft]]


def _handlers(lang: str) -> dict[str, _Handler]:
    simple = {"like": _like, "diet": _diet, "veg": _veg, "quit": _quit, "allergy": _allergy, "residence": _residence,
              "name": _name, "age": _age, "health": _health, "smoke": _smoke}  # fmt: skip
    kinds = {"employer": _employer, "jobmove": _employer, "join": _employer, "leave": _employer,
             "occupation": _occupation, "occupation2": _occupation, "retired": _occupation, "schedule": _schedule,
             "habit": _schedule, "family": _family, "possessive": _family}  # fmt: skip
    out: dict[str, _Handler] = {k: partial(f, lang=lang) for k, f in simple.items()}
    out.update({k: partial(f, lang=lang, kind=k) for k, f in kinds.items()})
    return out


_HANDLERS_ZH = _handlers("zh")
_HANDLERS_EN = _handlers("en")
