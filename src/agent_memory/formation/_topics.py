"""Topic vocabulary for self-statements: topic keys and labels, and the small lexicons the rules use.

Everything here is data: which topics exist, how they are shown (Chinese label by default, English on
request), which are single-valued (a newer statement replaces the older one whatever it names), and the
word lists that decide a topic (a liked *food* is ``diet``, a liked *film* is ``interest``) or normalise a
subject so that "辣的", "吃辣" and "辣椒" are one subject. Lists are deliberately short and common: an
unknown word falls back to the generic topic, it never invents a fact.

Allergies: an allergy to a food is a ``diet`` statement about that food (negative: the user avoids it),
so "我对花生过敏" and "我不吃花生" agree and "我现在能吃花生了" conflicts with both. An allergy to
anything else (花粉, pollen, penicillin) is ``health``. Smoking is ``health`` too (subject 吸烟 / smoking).

The lexicons themselves (food, health, occupations, family, places, stop lists) live in :mod:`._lexicon`
and are re-exported here; this module keeps the topics, subject normalisation, speech markers and rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..text import fold
from ._lexicon import CITIES_ZH as CITIES_ZH
from ._lexicon import EN_NOT_EMPLOYERS as EN_NOT_EMPLOYERS
from ._lexicon import EN_STOP_WORDS as EN_STOP_WORDS
from ._lexicon import FAMILY_EN as FAMILY_EN
from ._lexicon import FAMILY_ZH as FAMILY_ZH
from ._lexicon import FOOD_EN as FOOD_EN
from ._lexicon import FOOD_HEAD_EN as FOOD_HEAD_EN
from ._lexicon import FOOD_SUFFIX_ZH as FOOD_SUFFIX_ZH
from ._lexicon import FOOD_ZH as FOOD_ZH
from ._lexicon import HEALTH_EN as HEALTH_EN
from ._lexicon import HEALTH_ZH as HEALTH_ZH
from ._lexicon import NON_SUBJECTS as NON_SUBJECTS
from ._lexicon import OCCUPATIONS_EN as OCCUPATIONS_EN
from ._lexicon import OCCUPATIONS_ZH as OCCUPATIONS_ZH
from ._lexicon import PETS as PETS
from ._lexicon import PLACE_SUFFIX_ZH as PLACE_SUFFIX_ZH
from ._lexicon import SCHEDULE_EN as SCHEDULE_EN
from ._lexicon import SCHEDULE_ZH as SCHEDULE_ZH
from ._lexicon import SMOKING_EN as SMOKING_EN
from ._lexicon import SMOKING_ZH as SMOKING_ZH

#: topic key -> (Chinese label, English label)
TOPICS: dict[str, tuple[str, str]] = {
    "occupation": ("职业", "occupation"),
    "employer": ("工作单位", "employer"),
    "residence": ("居住地", "residence"),
    "interest": ("兴趣", "interest"),
    "diet": ("饮食", "diet"),
    "schedule": ("作息", "schedule"),
    "family": ("家庭", "family"),
    "name": ("姓名", "name"),
    "age": ("年龄", "age"),
    "health": ("健康", "health"),
    "marital": ("婚姻状况", "marital status"),
}

#: What a question or request is about, by profile topic: words that put it on the topic. "周末想放松一下，有什么推荐"
#: asks about the user's interests although it names none of them, "晚饭吃什么好" about their diet. The
#: recall adds the topic's label (the word every stored profile item of the topic starts with, "兴趣: 科幻电影")
#: to such a question's expanded search, so the items are found by the words the archiver wrote. Cues
#: name the kind of activity, never a particular item (电影 is a cue for interests, 科幻 is not).
TOPIC_CUES: dict[str, str] = {
    "interest": r"放松|休闲|娱乐|消遣|解闷|散心|无聊|好玩|玩点|玩什么|周末|假期|放假|休息日|空闲|有空|爱好|兴趣|"
    r"电影|影片|电视剧|追剧|综艺|音乐|歌曲|听歌|看书|读书|书籍|小说|游戏|运动|健身|旅行|旅游|出去走走|看点|看什么|听什么|读什么"
    r"|\b(relax\w*|weekend|holiday|vacation|fun|bored|hobb(y|ies)|free time|movies?|films?|shows?|series|music|songs?"
    r"|books?|novels?|games?|sports?|travel\w*|trips?|watch|read|listen)\b",
    "diet": r"吃|喝|饭|餐|菜|零食|外卖|夜宵|宵夜|口味|饮料|饮食|下厨|做饭|菜谱"
    r"|\b(eat\w*|food|meals?|breakfast|lunch|dinner|snacks?|restaurants?|cook\w*|recipes?|drinks?|cuisine|diet)\b",
    "schedule": r"睡|起床|作息|熬夜|早起|午休|\b(sleep\w*|bedtime|wake|waking|routine)\b",
    "health": r"身体|健康|锻炼|吃药|药物|过敏|体检|\b(health\w*|exercis\w*|workouts?|medicine|allerg\w*)\b",
    "occupation": r"职业|跳槽|面试|简历|工作机会|\b(career|job|jobs|interview\w*|resume)\b",
    "residence": r"搬家|租房|住哪|住在|房子|\b(move|moving|apartment|neighbou?rhood|rent)\b",
}

#: A newer direct statement on these topics replaces the older one regardless of subject.
SINGLE_VALUED: frozenset[str] = frozenset({"occupation", "employer", "residence", "name", "age", "marital"})


def topic_label(topic: str, lang: str = "zh") -> str:
    """The display label of a topic (``occupation`` -> 职业, or ``occupation`` with ``lang="en"``).

    An unknown topic (from a model extractor, say) is shown as itself.
    """
    labels = TOPICS.get(topic)
    if labels is None:
        return topic
    return labels[1] if lang == "en" else labels[0]


def is_single_valued(topic: str) -> bool:
    """True for topics where only the newest value holds (occupation, employer, residence, name, age,
    marital status)."""
    return topic in SINGLE_VALUED


_SPACES = re.compile(r"\s+")


def subject_key(subject: str) -> str:
    """The identity of a subject: folded, inner whitespace collapsed, leading articles dropped."""
    key = _SPACES.sub(" ", fold(subject)).strip(" .,!?;:'\"")
    for article in ("the ", "a ", "an "):
        if key.startswith(article):
            key = key[len(article) :]
    return key


def food_zh(obj: str) -> str | None:
    """The canonical food subject of a Chinese object, or None when it is not food."""
    key = subject_key(obj)
    if key in FOOD_ZH:
        return FOOD_ZH[key]
    if len(key) >= 2 and key.endswith(FOOD_SUFFIX_ZH) and not key.endswith(("电影", "音乐")):
        return key
    return None


def food_en(obj: str) -> str | None:
    """The canonical food subject of an English object, or None when it is not food."""
    key = subject_key(obj)
    if key in FOOD_EN:
        return FOOD_EN[key]
    words = key.split()
    if words and words[-1] in FOOD_HEAD_EN:
        return key
    return None


# --- speech markers (used by _statements to give each clause its speech kind) -----------------------

CJK = re.compile(r"[\u4e00-\u9fff]")
#: A change of state told without a subject ("Moved to Austin last week!"): the speaker's own.
EN_ZERO_SUBJECT = re.compile(
    r"^(?:just |finally |recently )?(?:moved|relocated|got married|got divorced|got engaged|quit my job|"
    r"left my job|started at|joined|changed jobs|switched jobs)\b",
    re.I,
)
#: A conditional that opens a clause without a subject ("要是搬到上海…"): the speaker's own supposition.
HYP_LEAD_ZH = re.compile(r"^(?:如果|假如|假设|假使|倘若|万一|要是)")
CONTRAST = re.compile(r"^\s*(?:但是|但|可是|不过|然而|其实|可|而|but|though|although|whereas|actually)", re.I)
HYP_ZH = re.compile(
    r"如果|假如|假设|假使|倘若|万一|哪怕|即使|即便|就算|(?<![主只还总硬可正])要是|想象|打算|准备|计划|想要|我想|希望|"
    r"可能会|也许|或许|说不定|考虑|将来|明年|下个月|下周|的话"
)
HYP_EN = re.compile(
    r"\b(?:if|suppose|supposing|imagine|hypothetically|would|could|might|maybe|perhaps|in case|pretend|"
    r"plan to|planning to|going to|gonna|want to|wanna|hope to|thinking about|thinking of|someday|one day|"
    r"will(?! not| never))\b",
    re.I,
)
REPORT_ZH = re.compile(
    r"听说|据说|告诉过我|告诉我|觉得|以为|认为|提到过|提到|(?<![小传演解听游])说(?![明话法服起]|不定|实话|真的)过?"
)
KIN_ZH = re.compile(
    r"^我的?(?:妈|爸|朋友|同事|老婆|老公|女朋友|男朋友|室友|同学|哥|姐|弟|妹|老板|领导|家人|爷|奶|外婆|外公|姥|"
    r"舅|姨|叔|阿姨|医生|对象|儿子|女儿|孩子|太太|先生|闺蜜|兄弟)"
)
REPORT_EN = re.compile(
    r"\b(?:says|said|say|thinks|thought|think|told me|tells me|claims|claimed|believes|believe|mentioned|"
    r"mentions|insists|keeps saying|heard that|heard|tells|told|telling)\b",
    re.I,
)
TAG = re.compile(
    r"(?:对吧|是吧|对不对|没错吧|对吗|是吗|对么|right|correct|is not it|do not you|did not you)\W{0,3}$", re.I
)
QUESTION_ZH = re.compile(r"[吗么][\s.!?。]{0,3}$|是不是|有没有|会不会|能不能|([\u4e00-\u9fff])不\1")
QUESTION_EN = re.compile(
    r"^\s*(?:do|does|did|am|are|is|was|have|has|can|could|should|what|why|how|when|where|who)\s+i\b", re.I
)
CHANGE_ZH = re.compile(r"现在|开始|已经|不再|再也|如今|后来|改成|变成|终于|重新|从今天起|从现在起|这几年|目前|戒")
CHANGE_EN = re.compile(
    r"\b(?:now|anymore|any more|no longer|these days|started|stopped|again|recently|switched|lately|nowadays|"
    r"quit|gave up|finally|just moved|moved)\b",
    re.I,
)
PAST_ZH = re.compile(r"以前|之前|过去|曾经|原来|小时候|本来|当年|那时候|那时|上学的时候|读书的时候|以往")
PAST_EN = re.compile(
    r"\b(?:used to|when i was|back then|in the past|as a kid|as a child|formerly|previously|years ago)\b", re.I
)


# --- rules -----------------------------------------------------------------------------------------


def _alt(words: Iterable[str]) -> str:
    """A regex alternation of ``words``, the longest first (so a word never stops at a shorter one)."""
    return "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))


# word tables below keep several entries to a line (fmt: off); one to a line they would fill screens
# fmt: off
_ADV_ZH = _alt([
    "现在", "已经", "一直", "也", "还", "真的", "其实", "本来", "从小", "特别", "挺", "很", "非常", "超级", "超",
    "最", "都", "就", "可", "倒", "以前", "之前", "过去", "曾经", "原来", "小时候", "后来", "最近", "这几年",
    "这些年", "如今", "今年", "开始", "越来越", "慢慢", "又", "重新", "平时", "一般", "通常", "经常", "总是",
    "每天", "天天", "向来", "始终", "确实", "的确", "真", "蛮", "还是", "比较", "相当", "早就", "早已", "终于",
    "逐渐", "渐渐", "突然", "居然", "反而", "从今天起", "从现在起", "目前", "暂时", "仍然", "依然", "照样", "好",
    "有点", "有些", "好像", "似乎", "大概",
    "哪天", "有一天", "某天", "该不该", "要不要", "应不应该", "是不是", "能不能", "改成", "改为",
    "上个月", "去年", "前年", "前段时间", "前几天", "前不久", "年初", "年底", "这个月", "上周", "打算", "准备",
    "计划", "想要", "想", "可能会", "可能", "也许", "习惯", "一向", "老是", "常常", "刚", "刚刚", "就是", "本身",
    "自己", "当时", "那时候", "一开始", "也是", "已", "才", "一样", "同样", "确确实实", "如今也",
    "从小到大", "一直以来", "这么多年", "多年来", "这些年来",
])
# fmt: on
# word tables below keep several entries to a line (fmt: off); one to a line they would fill screens
# fmt: off
_NEG_ZH = _alt([
    "一点都不", "一点也不", "根本不", "从来不", "从来没", "再也不", "并不", "都不", "不再", "不太", "不怎么",
    "不大", "不是很", "不能", "不敢", "不会", "很少", "几乎不", "基本不", "从不", "没那么", "没有", "没怎么", "没",
    "不", "别", "也不", "还不", "就不",
])
# fmt: on
# word tables below keep several entries to a line (fmt: off); one to a line they would fill screens
# fmt: off
_ADV_EN = _alt([
    "really", "still", "also", "absolutely", "totally", "kind of", "kinda", "sort of", "just", "now", "always",
    "actually", "truly", "genuinely", "seriously", "definitely", "honestly", "even", "usually", "generally",
    "mostly", "normally", "often", "sometimes", "rarely", "never", "no longer", "recently", "finally", "already",
    "do", "does", "did", "not", "used to", "have", "had", "has", "started to", "began to", "started", "can",
    "could", "am", "is", "are", "was", "would", "again", "personally", "basically", "ever", "especially",
    "currently", "officially", "been", "pretty much", "literally", "completely", "typically", "mainly", "no",
    "totally", "slowly", "gradually", "suddenly", "still", "should", "must", "need to", "have to", "ought to",
    "plan to", "planning to", "going to", "want to", "hope to", "might", "may", "will", "would like to",
    "thinking about", "thinking of",
])
# fmt: on
ZERO_SUBJECT = re.compile(rf"(?:{_ADV_ZH}|{_NEG_ZH})")
_ZH = r"(?P<subj>我|你|他|她|ta)"
_ZA = rf"(?P<adv>(?:{_ADV_ZH}){{0,4}})"
_ZN = rf"(?P<neg>{_NEG_ZH})?"
_ZO = r"(?P<obj>[^,.。!?;:“”\"]{0,24})"
_EN = r"\b(?P<subj>i|you|he|she|they)"
_EN_WE = r"\b(?P<subj>i|you|he|she|they|we)"  # a household's move or home is the user's too
_EZ = rf"(?P<adv>(?: (?:{_ADV_EN})){{0,5}})"
_EO = r"(?P<obj> [^,.;:!?\"“”]{1,48})"
_FAMILY_ZH = _alt(FAMILY_ZH)
_FAMILY_EN = _alt(FAMILY_EN)

_RULES_ZH: tuple[tuple[str, str], ...] = (
    (
        "like",
        rf"{_ZH}{_ZA}{_ZN}(?P<verb>喜欢上了|喜欢上|喜欢|热爱|爱上了|爱上|爱(?![人好])|迷上了|迷上|讨厌|厌恶|反感|受不了|怕){_ZO}",
    ),
    (
        "like",
        rf"{_ZH}{_ZA}{_ZN}对(?P<obj>[^,.。!?;:]{{1,16}}?)(?:很|非常|特别|挺|比较|超|蛮)?(?P<neg2>不|没)?(?P<verb>感兴趣|有兴趣|着迷)",
    ),
    ("veg", rf"{_ZH}{_ZA}{_ZN}(?P<verb>吃素|吃全素|是素食者|是素食主义者|是吃素的|是纯素食者)"),
    ("diet", rf"{_ZH}{_ZA}{_ZN}(?P<modal>能|敢|可以|爱|会|要多|多|要|少)?(?P<verb>吃|喝|碰|沾){_ZO}"),
    ("quit", rf"{_ZH}{_ZA}(?:戒掉了|戒了|戒掉|在戒|戒)(?P<obj>[^,.。!?;:]{{1,10}})"),
    ("quit", rf"{_ZH}{_ZA}把(?P<obj>[^,.。!?;:]{{1,10}}?)戒掉?了"),
    ("allergy", rf"{_ZH}{_ZA}{_ZN}对(?P<obj>[^,.。!?;:]{{1,10}}?)(?:严重|有点|有些|很|非常|特别)?过敏"),
    ("allergy", rf"{_ZH}{_ZA}{_ZN}(?P<obj>[^,.。!?;:对]{{1,6}}?)过敏"),
    (
        "employer",
        rf"{_ZH}{_ZA}{_ZN}在(?P<obj>[^,.。!?;:在]{{1,20}}?)(?P<verb>工作|上班|实习|任职|就职|供职|打工)(?P<past>过)?",
    ),
    (
        "employer",
        rf"{_ZH}{_ZA}{_ZN}在(?P<obj>[^,.。!?;:在]{{1,15}}?(?:公司|集团|银行|研究所|研究院|事务所|工作室|律所))",
    ),
    (
        "jobmove",
        rf"{_ZH}{_ZA}(?P<verb>跳槽到|跳槽去|跳槽进|跳槽来|入职|换到|去|到)了?(?P<obj>[^,.。!?;:]{{1,20}}?)(?P<tail>工作|上班|了|$)",
    ),
    ("leave", rf"{_ZH}{_ZA}从(?P<obj>[^,.。!?;:]{{1,15}}?)(?:离职|辞职)"),
    (
        "quitjob",
        rf"{_ZH}{_ZA}(?P<verb>辞职|离职|裸辞|辞掉了?工作|辞了工作|丢了工作|失业|被裁员?|下岗|换工作|换了工作|换了份工作|"
        r"跳槽了)",
    ),
    (
        "marital",
        rf"{_ZH}(?:(?:和|跟|与)[^,.。!?;:]{{1,6}}?)?{_ZA}{_ZN}(?P<verb>结婚|离婚|离异|已婚|未婚|订婚|(?:是|是个|是一个)?单身)",
    ),
    (
        "occupation",
        rf"{_ZH}{_ZA}{_ZN}(?P<verb>是|当了|当|做了|成了|成为了|成为|转行做|转行当|转行成|干)了?(?:一名|一个|一位|名|个|位)?"
        rf"(?P<obj>[^,.。!?;:]{{0,10}}?(?:{_alt(OCCUPATIONS_ZH)}))(?![会证卡长的家])",
    ),
    ("occupation2", rf"{_ZH}{_ZA}{_ZN}是做(?P<obj>[^,.。!?;:的]{{1,6}})的"),
    # "我在腾讯做产品经理": where and what in one clause (the employer, and the job when it is one)
    (
        "employer_role",
        rf"{_ZH}{_ZA}{_ZN}在(?P<obj>[^,.。!?;:在做当]{{1,15}}?)(?P<verb>做|当|担任|任)了?(?:一名|一个|一位|名|个|位)?"
        rf"(?P<role>[^,.。!?;:]{{0,10}}?(?:{_alt(OCCUPATIONS_ZH)}))(?![会证卡长的家])",
    ),
    ("retired", rf"{_ZH}{_ZA}(?P<verb>退休)"),
    (
        "residence",
        rf"{_ZH}{_ZA}{_ZN}(?P<verb>住在|定居在|定居于|定居|生活在|常住在|住到了|住到|住)(?P<obj>[^,.。!?;:]{{1,16}})",
    ),
    (
        "residence",
        rf"{_ZH}(?:们(?:全家|一家|家)?)?{_ZA}(?P<verb>搬家到|搬家去|搬到|搬去|搬回到|搬回|搬来)了?(?P<obj>[^,.。!?;:]{{1,16}})",
    ),
    ("residence", rf"{_ZH}的?家(?:住)?在(?P<obj>[^,.。!?;:]{{1,16}})"),
    ("residence", rf"{_ZH}{_ZA}{_ZN}在(?P<obj>[^,.。!?;:在]{{1,10}}?)(?:生活|定居)"),
    (
        "schedule",
        rf"{_ZH}{_ZA}(?P<time>(?:早上|早晨|晚上|夜里|凌晨|中午|下午)?[0-9一二两三四五六七八九十]{{1,3}}点(?:半|多|钟|左右|前|以前|之前|后|以后)?)"
        r"(?:就|才|准时|左右|多)?(?P<verb>起床|起来|起|睡觉|睡|上床|入睡)",
    ),
    ("habit", rf"{_ZH}{_ZA}{_ZN}(?P<verb>熬夜|早起|早睡|晚睡|晚起|睡懒觉)"),
    ("habit", rf"{_ZH}{_ZA}是(?:个|一个)?(?P<verb>夜猫子|早起的人|晨型人)"),
    (
        "family",
        rf"{_ZH}(?:家里|家)?{_ZA}{_ZN}(?P<verb>有|养了|养)(?P<num>[0-9一两二三四五六七八九十]?(?:个|位|只|条|对)?)"
        rf"(?P<obj>{_FAMILY_ZH})(?![毛粮砂咖头鹰])",
    ),
    ("possessive", rf"{_ZH}(?:的|家的|家里的|家)?(?P<obj>{_FAMILY_ZH})(?![毛粮砂咖头鹰])"),
    ("name", rf"{_ZH}(?:的名字是|的名字叫|名字叫|名字是|叫做|叫)(?P<obj>[\u4e00-\u9fffA-Za-z·]{{1,8}})"),
    (
        "age",
        rf"{_ZH}{_ZA}(?:今年|已经|快|都|刚满|刚|满)?(?P<n>[0-9]{{1,3}}|[一二两三四五六七八九十百]{{1,4}})周?岁(?P<tail>的|时|那)?",
    ),
    ("health", rf"{_ZH}{_ZA}{_ZN}(?:有|得了|患有|患了|确诊了|确诊|查出了|查出)?(?P<obj>{_alt(HEALTH_ZH)})"),
    ("smoke", rf"{_ZH}{_ZA}{_ZN}(?P<verb>抽烟|吸烟)"),
)
_FOOD_VERB_EN = r"(?P<verb>eat|eats|eating|ate|drink|drinks|drinking|drank|touch|touches)"
_RULES_EN: tuple[tuple[str, str], ...] = (
    (
        "like",
        rf"{_EN}{_EZ} (?P<verb>love|loves|loved|like|likes|liked|enjoy|enjoys|enjoyed|adore|adores|hate|hates|hated|"
        rf"dislike|dislikes|detest|detests|into|a fan of|a big fan of|a huge fan of|obsessed with|crazy about|"
        rf"passionate about|interested in|fond of|keen on|stand|bear)\b{_EO}",
    ),
    (
        "veg",
        rf"{_EN}{_EZ} (?P<verb>am|is|are|were|became|become|went|turned|have been|was|go)(?P<neg2> not| no longer)?"
        r" (?:a |an |fully |strictly |completely |now )?(?P<obj>vegetarian|vegan|pescatarian|plant-based)\b",
    ),
    ("diet", rf"{_EN}{_EZ} {_FOOD_VERB_EN}\b(?P<obj> [^,.;:!?\"“”]{{1,40}})?"),
    (
        "quit",
        rf"{_EN}{_EZ} (?P<verb>quit|gave up|give up|stopped|stop|cut out|avoid|avoids|stay away from|kicked)\b{_EO}",
    ),
    (
        "allergy",
        rf"{_EN}{_EZ} (?:am|is|are)(?P<neg2> not| no longer)?"
        r"(?: severely| very| mildly| deathly| seriously| super| really)?"
        rf" allergic to{_EO}",
    ),
    ("allergy", rf"{_EN}{_EZ} (?:have|has) (?:a |an )(?:severe |mild |bad |serious )?(?P<obj>[a-z ]{{1,20}}?) allergy"),
    (
        "employer",
        rf"{_EN}{_EZ} (?P<verb>work|works|worked|working|got a job|got a new job|started a new job|started working|"
        rf"took a job|landed a job|accepted a job|accepted an offer|have a job|have a new job) (?:at|for)\b{_EO}",
    ),
    ("join", rf"{_EN}{_EZ} (?P<verb>joined|started at)\b{_EO}"),
    ("join", rf"{_EN}{_EZ} (?:am|is|are) (?:a|an) [a-z -]{{1,30}}? (?:at|for)\b{_EO}"),
    ("leave", rf"{_EN}{_EZ} (?:left|quit|resigned from) (?:my job at|my job with|my position at|my role at)\b{_EO}"),
    ("leave", rf"{_EN}{_EZ} resigned from\b{_EO}"),
    (
        "quitjob",
        rf"{_EN}{_EZ} (?P<verb>quit|left|lost|resigned from|got fired from|was laid off from|got laid off from)"
        r" my job\b(?! at| with| in| as)",
    ),
    ("quitjob", rf"{_EN}{_EZ} (?P<verb>resigned|got fired|was fired|got laid off|was laid off)\b(?! from)"),
    (
        "quitjob",
        rf"{_EN}{_EZ} (?P<verb>(?:am|is|are) (?:unemployed|out of work|between jobs|jobless)|changed jobs|"
        r"switched jobs|changed my job|switched my job)\b",
    ),
    (
        "marital",
        rf"{_EN}{_EZ} (?P<verb>got married|get married|getting married|married|got divorced|get divorced|"
        r"getting divorced|divorced|single|separated|widowed|engaged|got engaged)\b",
    ),
    (
        "occupation",
        rf"{_EN}{_EZ} (?P<verb>work|works|worked|working) (?:at|for) [^,.;:!?]{{1,40}}? as (?:a|an) "
        rf"(?P<obj>[a-z -]{{0,30}}?(?:{_alt(OCCUPATIONS_EN)}))\b",
    ),
    (
        "occupation",
        rf"{_EN}{_EZ} (?P<verb>am|is|are|was|were|became|become|work as|works as|worked as|working as|got a job as|"
        r"trained as|started working as)(?P<neg2> not| no longer| now)? (?:a|an) "
        rf"(?P<obj>[a-z -]{{0,30}}?(?:{_alt(OCCUPATIONS_EN)}))\b",
    ),
    ("retired", rf"{_EN}{_EZ} (?P<verb>retired)\b"),
    (
        "residence",
        rf"{_EN_WE}{_EZ} (?P<verb>live|lives|lived|living|moved|move|moving|relocated|relocate|settled|based|"
        r"reside|resides)"
        rf" (?:in|to|back to|over to|out to|down to|up to)\b{_EO}",
    ),
    (
        "schedule",
        rf"{_EN}{_EZ} (?P<verb>go to bed|goes to bed|go to sleep|goes to sleep|fall asleep|falls asleep|sleep|sleeps|"
        r"wake up|wakes up|get up|gets up|head to bed|turn in)\b(?P<obj> [^,.;!?\"“”]{1,40})?",
    ),
    (
        "habit",
        rf"{_EN}{_EZ} (?P<verb>stay up late|stays up late|stay up|stays up|pull all-nighters|a night owl|"
        r"an early riser|"
        r"a morning person|an early bird)\b",
    ),
    (
        "family",
        rf"{_EN}{_EZ} (?P<verb>have|has|had|got|adopted|raising)"
        r"(?P<num> a| an| one| two| three| four| five| [0-9]| no| twin)?"
        r"(?: little| baby| young| new| grown| teenage| older| younger| rescue| pet| adopted)?"
        rf" (?P<obj>{_FAMILY_EN})\b",
    ),
    (
        "possessive",
        r"\b(?P<subj>my|your|his|her)"
        r"(?: little| baby| young| older| younger| oldest| youngest| eldest| new| two| three)?"
        rf" (?P<obj>{_FAMILY_EN})\b",
    ),
    ("name", r"\b(?P<subj>my|your) name is (?P<obj>[a-z][a-z' -]{0,40})"),
    ("name", r"\b(?P<subj>call me) (?P<obj>[a-z][a-z' -]{0,30})"),
    (
        "age",
        rf"{_EN}{_EZ} (?P<verb>am|is|are|turned|just turned|was) (?P<n>[0-9]{{1,3}})"
        r"(?P<unit> years old| years of age| yrs old|"
        r" year old| y/o| this year)?\b",
    ),
    (
        "health",
        rf"{_EN}{_EZ} (?P<verb>have|has|had|suffer from|suffers from|was diagnosed with|got diagnosed with|am|is|are|"
        r"live with|struggle with|deal with) (?:a |an )?(?:mild |severe |chronic |bad |terrible )?"
        rf"(?P<obj>{_alt(HEALTH_EN)})\b",
    ),
    ("smoke", rf"{_EN}{_EZ} (?P<verb>smoke|smokes|smoked|vape|vapes)\b"),
)
RULES: dict[str, tuple[tuple[str, re.Pattern[str]], ...]] = {
    "zh": tuple((kind, re.compile(p, re.I)) for kind, p in _RULES_ZH),
    "en": tuple((kind, re.compile(p, re.I)) for kind, p in _RULES_EN),
}
#: A rule's subject group: words to choose from ("我|你", "my|your").
SUBJECT_GROUP = re.compile(r"\(\?P<subj>([^()]*)\)")
#: Every way a rule writes its subject, in lower case (read off the rules). Every rule names its
#: subject, so a clause holding none of the forms its speaker may use matches no rule.
SUBJECT_FORMS: frozenset[str] = frozenset(
    form
    for rules in (_RULES_ZH, _RULES_EN)
    for _, pattern in rules
    for group in SUBJECT_GROUP.findall(pattern)
    for form in group.split("|")
)
