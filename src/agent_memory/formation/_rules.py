"""Rule handlers for :mod:`._statements`: a regex match in a clause -> :class:`Draft` values.

:func:`run_rules` runs every rule of :data:`._topics.RULES` over a :class:`~._clauses.Clause` and hands each
match to its per-topic handler (likes, diet, employer, residence, ...), which decides the topic, subject,
display value and polarity. Kept apart from the clause analysis (:mod:`._clauses`), which decides how a
thing was said; the object-phrase helpers the handlers share are in :mod:`._phrases`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import TYPE_CHECKING

from ..text import zh_number
from . import _topics as T
from ._clauses import Clause
from ._phrases import _clean_en, _clean_zh, _g, _negated, _parts, _pol
from ._topics import subject_key

if TYPE_CHECKING:
    from ._statements import Polarity


@dataclass(frozen=True, slots=True)
class Draft:
    """What a rule found in a clause, before speech, role and time are attached."""

    topic: str
    subject: str
    value: str
    polarity: Polarity
    change: bool = False
    past: bool = False


_POSSESSIVE = {"my": "i", "your": "you", "his": "he", "her": "she", "call me": "i", "we": "i"}
#: "I have always lived in X", "I've worked at Y for years": a state that began earlier and still holds.
_PERFECT_EN = re.compile(r"\b(?:have|has)\b", re.I)
#: How often a habit happens ("I drink coffee every morning"): a habit, not one event.
_HABIT_EN = re.compile(
    r"\b(?:again|every (?:day|morning|night|evening|week|weekend)|each (?:day|morning|night)|daily|a lot|"
    r"all the time|regularly|most days)\b",
    re.I,
)
_ZH_PLACE_STOP = re.compile(
    r"快|已经|有|都|也|就|还|和|跟|了|的|工作|上班|生活|住|[0-9一二两三四五六七八九十几半]+(?:年|个月|天|周)"
)
_EN_GERUND = re.compile(r"^(?:to |watching |playing |listening to |reading |doing |going to )", re.I)
_EN_NOT_PLACE = re.compile(r"\b(?:my|our|his|her|their|whole|entire)\b", re.I)  # "in Paris my whole life"
_EN_TIME = re.compile(
    r"\b(?:at|around|by|before|after|about)\s(\d{1,2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?|midnight|noon)", re.I
)


def run_rules(clause: Clause, previous: Draft | None, *, carried: bool = False) -> list[Draft]:
    """Every rule over the clause; a Chinese clause without a subject borrows the speaker's when it
    continues a statement (现在不吃了, after a draft or an adverb), opens with a supposition (要是搬到上海)
    or follows a clause the speaker began (``carried``: 我搬家了，搬到了广州)."""
    drafts = _apply(clause.text, clause, previous)
    text = T.CONTRAST.sub("", clause.text).lstrip()
    if not drafts and clause.lang == "en" and "i" in clause.subjects and T.EN_ZERO_SUBJECT.match(text):
        return _apply("I " + text, clause, previous)
    lead = T.HYP_LEAD_ZH.match(text) if clause.lang == "zh" else None
    if lead:  # "要是搬到上海": a supposition without a subject is the speaker's own
        text = text[lead.end() :]
    if (
        not drafts
        and clause.lang == "zh"
        and not re.match(r"[我你他她]", text)
        and (previous or lead or carried or T.ZERO_SUBJECT.match(text))
    ):
        pronoun = "我" if "我" in clause.subjects else "你"
        drafts = _apply(pronoun + text, clause, previous)
    return drafts


def speaks_first(clause: Clause) -> bool:
    """Whether a Chinese clause opens with the speaker as its subject (我… for the user, 你… for the
    assistant), not with one of their people (我妈…, 我朋友…)."""
    if clause.lang != "zh":
        return False
    text = T.CONTRAST.sub("", clause.text).lstrip()
    pronoun = "我" if "我" in clause.subjects else "你"
    return text.startswith(pronoun) and not T.KIN_ZH.match("我" + text[1:])


@lru_cache(maxsize=64)
def _forms(subjects: frozenset[str]) -> tuple[str, ...]:
    """How the subjects a clause allows may be written in a rule (``my`` for ``i``)."""
    return tuple(sorted(f for f in T.SUBJECT_FORMS if _POSSESSIVE.get(f, f) in subjects))


def _apply(text: str, clause: Clause, previous: Draft | None) -> list[Draft]:
    lowered = text.lower()
    if not any(form in lowered for form in _forms(clause.subjects)):
        # no rule can match (each names an allowed subject): most clauses of a reply that quotes
        # memories, whose rules cost about a third of a millisecond a message for nothing
        return []
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


def _like(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str) -> list[Draft]:
    verb = _g(m, "verb").lower()
    if lang == "zh" and _g(m, "obj").startswith("的"):
        return []  # 我喜欢的电影是…: a relative clause, not an object
    if verb in ("stand", "bear") and "not" not in _g(m, "adv").lower():
        return []
    # the word table keeps several entries to a line (fmt: skip); one to a line it would fill a screen
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
        past = verb.endswith("ed") and verb != "interested" and not _perfect(m) and "never" not in _g(m, "adv")
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
        habit = _HABIT_EN.search(obj) is not None
        habitual = negated or habit or _g(m, "adv") or clause.speech != "direct" or clause.change
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
    """A city, a word ending in a place suffix (徐汇区, 公司里), or 这里/那边/家里. A suffix after one other
    character is a name's end (阿里, 华州), unless that character is a place itself (家里, 城里, 村里)."""
    suffixed = obj.endswith(T.PLACE_SUFFIX_ZH) and (len(obj) > 2 or obj[:1] in "家城村店厂楼院屋镇乡")
    return obj in T.CITIES_ZH or suffixed or obj.startswith(("这", "那", "家"))


def _employer(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str, kind: str) -> list[Draft]:
    negated = _negated(m)
    if lang == "zh":
        obj = _clean_zh(_g(m, "obj")).removesuffix("那边").removesuffix("这边")
        if kind == "jobmove" and _g(m, "verb") in ("去", "到") and _g(m, "tail") not in ("工作", "上班"):
            return []
        hired = _g(m, "verb").startswith(("跳槽", "入职"))  # 跳槽到阿里: after these comes an employer, never a place
        if (
            not obj
            or (_is_place_zh(obj) and not hired)
            or subject_key(obj) in T.NON_SUBJECTS
            or re.search(r"公司上|办公|工位", obj)
        ):
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
    return [Draft("employer", obj, value, _pol(negated), change=change, past=verb == "worked" and not _perfect(m))]


def _quit_job(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str) -> list[Draft]:
    """ "我辞职了" / "I quit my job" / "我换工作了": the employer, whichever it was, is no longer one."""
    verb = _g(m, "verb").lower()
    if lang == "zh":
        value = "换了工作" if verb.startswith(("换", "跳槽")) else "已离职"
    else:
        value = "changed jobs" if "job" in verb and verb.startswith(("changed", "switched")) else "left their job"
    return [Draft("employer", "", value, "negative", change=True)]


# the word table keeps several entries to a line (fmt: skip); one to a line it would fill a screen
_MARITAL_ZH = {"结婚": "已婚", "已婚": "已婚", "离婚": "离婚", "离异": "离婚", "未婚": "单身", "单身": "单身",
               "订婚": "订婚"}  # fmt: skip
# the word table keeps several entries to a line (fmt: skip); one to a line it would fill a screen
_MARITAL_EN = {"married": "married", "divorced": "divorced", "single": "single", "separated": "separated",
               "widowed": "widowed", "engaged": "engaged"}  # fmt: skip


def _marital(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str) -> list[Draft]:
    """Married, divorced, single: one status at a time. "我还没结婚" / "I'm not married" is single; a
    negated divorce or single ("我不是单身") says no status."""
    verb = _g(m, "verb").lower()
    if lang == "zh":
        status = _MARITAL_ZH[re.sub(r"^是(?:一?个)?", "", verb)]
        single, married = "单身", "已婚"
    else:
        status = _MARITAL_EN[verb.split()[-1]]
        single, married = "single", "married"
    if _negated(m):
        if status != married:
            return []
        status = single
    change = verb.startswith(("got", "get", "结婚", "离婚", "订婚"))
    return [Draft("marital", "", status, "positive", change=change)]


def _occupation(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str, kind: str) -> list[Draft]:
    negated, obj, adv = _negated(m), _g(m, "obj"), _g(m, "adv") + _g(m, "neg") + _g(m, "neg2")
    if negated and not re.search(r"不再|已经|no longer|anymore|now", adv + " " + m.string, re.I):
        return []  # "我不是医生" / "I'm not a doctor, but..." is a hedge, not a change of job
    if kind == "retired":  # no job and no employer any more
        value = "退休" if lang == "zh" else "retired"
        return [
            Draft("occupation", "", value, "positive", change=True),
            Draft("employer", "", value, "negative", change=True),
        ]
    if lang == "zh":
        obj = re.sub(r"^[0-9一两二三四五六七八九十几]+年", "", obj)
        value = f"做{obj}的" if kind == "occupation2" else obj
        return [Draft("occupation", "", f"不再是{value}" if negated else value, _pol(negated))]
    verb = _g(m, "verb").lower()
    return [
        Draft(
            "occupation",
            "",
            f"no longer a {obj}" if negated else obj,
            _pol(negated),
            past=verb == "was" or verb.startswith("worked"),
        )
    ]


def _employer_role(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str, kind: str) -> list[Draft]:
    """ "我在腾讯做产品经理": the employer (unless the place is a city or a room: "我在北京做程序员") and the job."""
    if _negated(m):
        return []  # "我不在腾讯做产品经理了": which of the two ended is not said
    obj = _clean_zh(_g(m, "obj")).removesuffix("那边").removesuffix("这边")
    role = re.sub(r"^[0-9一两二三四五六七八九十几]+年", "", _g(m, "role"))
    drafts = [Draft("occupation", "", role, "positive")]
    if (
        obj
        and not _is_place_zh(obj)
        and subject_key(obj) not in T.NON_SUBJECTS
        and not re.search(r"公司上|办公|工位", obj)
    ):
        drafts.insert(0, Draft("employer", obj, f"在{obj}工作", "positive"))
    return drafts


def _residence(m: re.Match[str], previous: Draft | None, clause: Clause, lang: str) -> list[Draft]:
    negated, verb = _negated(m), _g(m, "verb").lower()
    if lang == "zh":
        obj = _g(m, "obj")
        city = next((c for c in T.CITIES_ZH if obj.startswith(c) and len(c) > 1), "")  # 成都 is not 成 + 都
        cut = _ZH_PLACE_STOP.search(obj, len(city))
        place = (obj[: cut.start()] if cut else obj).strip()
        if not place or re.search(r"公司|办公|工位|座位|部门|组|院", place) or place[0] in "这那你他她":
            return []
        if verb == "住" and not (place in T.CITIES_ZH or _is_place_zh(place)):
            return []  # "我现在住重庆", not "我住得很远" / "我住院了"
        value = f"{'不再' if negated else ''}住在{place}"
        return [Draft("residence", place, value, _pol(negated), change=verb.startswith("搬"))]
    place = " ".join(_EN_NOT_PLACE.split(_clean_en(_g(m, "obj"), 4))[0].split())
    if not place or not place[0].isupper():
        return []  # "I live in a small flat", "moved to the next level": only named places
    value = f"{'no longer lives' if negated else 'lives'} in {place}"
    return [
        Draft(
            "residence",
            place,
            value,
            _pol(negated),
            change=verb.startswith("move") or verb.startswith("reloc"),
            past=verb == "lived" and not _perfect(m),
        )
    ]


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


def _perfect(m: re.Match[str]) -> bool:
    """Whether the match is in the present perfect ("I have always lived in X"): it still holds."""
    return bool(_PERFECT_EN.search(_g(m, "adv")))


_Handler = Callable[[re.Match[str], "Draft | None", Clause], list[Draft]]


def _handlers(lang: str) -> dict[str, _Handler]:
    simple = {
        "like": _like,
        "diet": _diet,
        "veg": _veg,
        "quit": _quit,
        "allergy": _allergy,
        "residence": _residence,
        "name": _name,
        "age": _age,
        "health": _health,
        "smoke": _smoke,
        "quitjob": _quit_job,
        "marital": _marital,
    }
    kinds = {
        "employer": _employer,
        "jobmove": _employer,
        "join": _employer,
        "leave": _employer,
        "employer_role": _employer_role,
        "occupation": _occupation,
        "occupation2": _occupation,
        "retired": _occupation,
        "schedule": _schedule,
        "habit": _schedule,
        "family": _family,
        "possessive": _family,
    }
    out: dict[str, _Handler] = {k: partial(f, lang=lang) for k, f in simple.items()}
    out.update({k: partial(f, lang=lang, kind=k) for k, f in kinds.items()})
    return out


_HANDLERS_ZH = _handlers("zh")
_HANDLERS_EN = _handlers("en")
