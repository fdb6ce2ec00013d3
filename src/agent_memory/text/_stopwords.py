"""Stop words for English (scikit-learn's list) and Chinese (function and question words)."""

from __future__ import annotations

#: scikit-learn's ``ENGLISH_STOP_WORDS`` (318 words, from the Glasgow Information Retrieval Group's list;
#: BSD-3-Clause), copied here so that importing the text package does not import scikit-learn.
_SKLEARN_ENGLISH = """
a about above across after afterwards again against all almost alone along already also although always am among
amongst amoungst amount an and another any anyhow anyone anything anyway anywhere are around as at back be
became because become becomes becoming been before beforehand behind being below beside besides between beyond
bill both bottom but by call can cannot cant co con could couldnt cry de describe detail do done down due during
each eg eight either eleven else elsewhere empty enough etc even ever every everyone everything everywhere
except few fifteen fifty fill find fire first five for former formerly forty found four from front full further
get give go had has hasnt have he hence her here hereafter hereby herein hereupon hers herself him himself his
how however hundred i ie if in inc indeed interest into is it its itself keep last latter latterly least less
ltd made many may me meanwhile might mill mine more moreover most mostly move much must my myself name namely
neither never nevertheless next nine no nobody none noone nor not nothing now nowhere of off often on once one
only onto or other others otherwise our ours ourselves out over own part per perhaps please put rather re same
see seem seemed seeming seems serious several she should show side since sincere six sixty so some somehow
someone something sometime sometimes somewhere still such system take ten than that the their them themselves
then thence there thereafter thereby therefore therein thereupon these they thick thin third this those though
three through throughout thru thus to together too top toward towards twelve twenty two un under until up upon
us very via was we well were what whatever when whence whenever where whereafter whereas whereby wherein
whereupon wherever whether which while whither who whoever whole whom whose why will with within without would
yet you your yours yourself yourselves
""".split()  # noqa: SIM905 (a list literal would be 318 lines)

ENGLISH: frozenset[str] = frozenset(_SKLEARN_ENGLISH) | {"did", "does", "doing", "done", "s", "t"}

#: Chinese function words, pronouns, particles and question words: frequent, and never what a memory is about.
CHINESE: frozenset[str] = frozenset(
    [
        "的",
        "了",
        "是",
        "在",
        "和",
        "与",
        "及",
        "或",
        "而",
        "但",
        "还",
        "又",
        "也",
        "都",
        "就",
        "很",
        "太",
        "真",
        "把",
        "被",
        "给",
        "让",
        "对",
        "从",
        "向",
        "到",
        "于",
        "以",
        "为",
        "之",
        "其",
        "着",
        "过",
        "地",
        "得",
        "吗",
        "呢",
        "吧",
        "啊",
        "呀",
        "哦",
        "嗯",
        "哎",
        "哇",
        "啦",
        "嘛",
        "呐",
        "哈",
        "诶",
        "额",
        "唉",
        "哎呀",
        "我",
        "你",
        "您",
        "他",
        "她",
        "它",
        "我们",
        "你们",
        "他们",
        "她们",
        "它们",
        "咱",
        "咱们",
        "自己",
        "这",
        "那",
        "这个",
        "那个",
        "这些",
        "那些",
        "这里",
        "那里",
        "这儿",
        "那儿",
        "此",
        "什么",
        "怎么",
        "怎么样",
        "怎样",
        "如何",
        "哪",
        "哪个",
        "哪些",
        "哪里",
        "哪儿",
        "谁",
        "多少",
        "几",
        "为什么",
        "是否",
        "是不是",
        "来着",
        # colloquial question words: a question names what it asks with them, a memory never does
        "啥",
        "干嘛",
        "咋",
        "咋办",
        "啥时候",
        "什么样",
        "多大",
        "多久",
        "怎么办",
        # time words counted from the moment they are said: a memory's 今天 is the day it was written, not
        # the day of the message, so the words match nothing (the time a message names is read apart,
        # see query_time_range, and weighs by date)
        "今天",
        "今日",
        "今儿",
        "今晚",
        "今早",
        "明天",
        "明儿",
        "明晚",
        "昨天",
        "昨儿",
        "昨晚",
        "前天",
        "后天",
        "刚才",
        "刚刚",
        "现在",
        "最近",
        "近来",
        "这几天",
        "这两天",
        "前几天",
        "这阵子",
        "一下",
        "有没有",
        "一个",
        "一些",
        "有",
        "没",
        "没有",
        "不",
        "会",
        "能",
        "可以",
        "要",
        "想",
        "说",
        "个",
        "些",
        "所以",
        "因为",
        "如果",
        "但是",
        "然后",
        "而且",
        "并且",
        "另外",
        "还是",
        "或者",
    ]
)

ALL: frozenset[str] = ENGLISH | CHINESE
