"""Word lists for the self-statement rules: food, health, occupations, family, places and stop lists.

Pure data, moved out of :mod:`._topics` (which re-exports every name here, so ``_topics.FOOD_ZH`` and
friends keep working) to keep the topic vocabulary and rule patterns apart from the long lexicons.
These lists decide a topic (a liked *food* is ``diet``, a liked *film* is ``interest``) or normalise a
subject; they are deliberately short and common: an unknown word falls back to the generic topic.
"""

from __future__ import annotations

# --- food (decides diet vs interest; canonical subject) -------------------------------------------
# word tables below keep several entries to a line (fmt: off); one to a line they would fill screens
# fmt: off

#: spelling -> canonical subject. Keys are folded (NFKC + lower case).
FOOD_ZH: dict[str, str] = {
    "辣": "辣", "辣的": "辣", "辣椒": "辣", "辛辣": "辣", "辣味": "辣", "麻辣": "辣", "重辣": "辣", "香菜": "香菜",
    "芫荽": "香菜", "海鲜": "海鲜", "甜食": "甜食", "甜的": "甜食", "甜品": "甜食", "肉": "肉", "荤": "肉",
    "荤菜": "肉", "肉类": "肉", "牛肉": "牛肉", "猪肉": "猪肉", "羊肉": "羊肉", "鸡肉": "鸡肉", "鱼": "鱼",
    "虾": "虾", "鸡蛋": "鸡蛋", "蛋": "鸡蛋", "牛奶": "牛奶", "乳制品": "牛奶", "花生": "花生", "坚果": "坚果",
    "葱": "葱", "姜": "姜", "蒜": "蒜", "大蒜": "蒜", "洋葱": "洋葱", "榴莲": "榴莲", "咖啡": "咖啡", "茶": "茶",
    "酒": "酒", "白酒": "酒", "啤酒": "啤酒", "红酒": "酒", "奶茶": "奶茶", "可乐": "可乐", "糖": "糖",
    "火锅": "火锅", "烧烤": "烧烤", "巧克力": "巧克力", "冰淇淋": "冰淇淋", "蛋糕": "蛋糕", "臭豆腐": "臭豆腐",
    "螺蛳粉": "螺蛳粉", "内脏": "内脏", "芒果": "芒果", "水果": "水果", "蔬菜": "蔬菜", "零食": "零食",
    "凉的": "凉的", "生冷": "凉的", "油腻": "油腻", "川菜": "川菜", "湘菜": "湘菜", "日料": "日料", "西餐": "西餐",
    "快餐": "快餐", "面食": "面食",
}
#: a Chinese object ending in one of these is food even when not listed (泡菜, 炒饭, 牛肉面, 鱼汤)
FOOD_SUFFIX_ZH: tuple[str, ...] = ("菜", "饭", "面", "汤", "肉", "茶", "酒", "果", "奶", "食", "鱼", "虾")

FOOD_EN: dict[str, str] = {
    "spicy food": "spicy food", "spicy foods": "spicy food", "spicy": "spicy food", "hot food": "spicy food",
    "spicy things": "spicy food", "chili": "spicy food", "chilli": "spicy food", "cilantro": "cilantro",
    "coriander": "cilantro", "seafood": "seafood", "shellfish": "shellfish", "sweets": "sweets",
    "sweet things": "sweets", "desserts": "sweets", "dessert": "sweets", "sugar": "sugar", "meat": "meat",
    "red meat": "meat", "pork": "pork", "beef": "beef", "chicken": "chicken", "fish": "fish", "shrimp": "shrimp",
    "eggs": "eggs", "egg": "eggs", "dairy": "dairy", "milk": "dairy", "cheese": "cheese", "peanuts": "peanuts",
    "peanut": "peanuts", "nuts": "nuts", "tree nuts": "nuts", "gluten": "gluten", "wheat": "gluten",
    "garlic": "garlic", "onions": "onions", "onion": "onions", "mushrooms": "mushrooms", "coffee": "coffee",
    "tea": "tea", "alcohol": "alcohol", "beer": "beer", "wine": "wine", "soda": "soda", "chocolate": "chocolate",
    "ice cream": "ice cream", "pizza": "pizza", "sushi": "sushi", "tofu": "tofu", "fast food": "fast food",
    "junk food": "junk food", "carbs": "carbs", "bread": "bread", "rice": "rice", "durian": "durian",
    "olives": "olives", "tomatoes": "tomatoes", "avocado": "avocado",
}
#: an English object whose last word is one of these is food ("thai food", "bubble tea", "oat milk")
FOOD_HEAD_EN: frozenset[str] = frozenset({"food", "foods", "cuisine", "tea", "coffee", "milk", "meat", "dishes"})

# --- health --------------------------------------------------------------------------------------

HEALTH_ZH: tuple[str, ...] = (
    "高血压", "糖尿病", "哮喘", "失眠", "胃病", "胃炎", "抑郁症", "焦虑症", "偏头痛", "颈椎病", "腰椎间盘突出",
    "鼻炎", "贫血", "痛风", "高血脂", "乳糖不耐受", "过敏性鼻炎", "心脏病", "关节炎",
)
HEALTH_EN: dict[str, str] = {
    "asthma": "asthma", "diabetes": "diabetes", "diabetic": "diabetes", "insomnia": "insomnia",
    "insomniac": "insomnia", "migraines": "migraines", "migraine": "migraines", "high blood pressure": "hypertension",
    "hypertension": "hypertension", "depression": "depression", "anxiety": "anxiety", "adhd": "adhd",
    "lactose intolerant": "lactose intolerance", "lactose intolerance": "lactose intolerance", "gout": "gout",
    "arthritis": "arthritis", "celiac disease": "gluten", "celiac": "gluten", "asthmatic": "asthma",
}
SMOKING_ZH: frozenset[str] = frozenset({"烟", "抽烟", "吸烟", "香烟"})
SMOKING_EN: frozenset[str] = frozenset({"smoking", "cigarettes", "smoke", "vaping"})

# --- occupations ---------------------------------------------------------------------------------

OCCUPATIONS_ZH: tuple[str, ...] = (
    "产品经理", "项目经理", "经理", "工程师", "程序员", "开发", "码农", "老师", "教师", "教授", "医生", "大夫",
    "护士", "设计师", "学生", "大学生", "研究生", "博士生", "硕士生", "高中生", "初中生", "律师", "会计", "会计师",
    "销售", "运营", "编辑", "记者", "作家", "厨师", "司机", "警察", "公务员", "演员", "歌手", "画家", "摄影师",
    "主播", "自由职业者", "创业者", "老板", "店主", "分析师", "研究员", "科学家", "建筑师", "咨询师", "顾问", "翻译",
    "药剂师", "理发师", "健身教练", "教练", "全职妈妈", "全职爸爸", "家庭主妇", "退休人员", "实习生", "文员", "HR",
    "hr", "人力资源", "架构师", "数据科学家", "测试",
)
OCCUPATIONS_EN: tuple[str, ...] = (
    "engineer", "developer", "programmer", "teacher", "professor", "doctor", "physician", "nurse", "designer",
    "student", "lawyer", "attorney", "accountant", "manager", "writer", "journalist", "editor", "chef", "cook",
    "driver", "police officer", "officer", "civil servant", "actor", "actress", "singer", "artist", "painter",
    "photographer", "consultant", "analyst", "researcher", "scientist", "architect", "pharmacist", "dentist",
    "barber", "hairdresser", "trainer", "coach", "translator", "freelancer", "entrepreneur", "founder", "intern",
    "salesperson", "marketer", "economist", "librarian", "pilot", "firefighter", "electrician", "plumber", "mechanic",
    "carpenter", "farmer", "veterinarian", "vet", "therapist", "psychologist", "student", "retiree", "homemaker",
    "stay-at-home mom", "stay-at-home dad", "data scientist", "surgeon",
)

# --- family --------------------------------------------------------------------------------------

FAMILY_ZH: dict[str, str] = {
    "女儿": "孩子", "儿子": "孩子", "孩子": "孩子", "小孩": "孩子", "宝宝": "孩子", "娃": "孩子", "老婆": "妻子",
    "妻子": "妻子", "太太": "妻子", "爱人": "配偶", "老公": "丈夫", "丈夫": "丈夫", "先生": "丈夫",
    "女朋友": "女朋友", "女友": "女朋友", "男朋友": "男朋友", "男友": "男朋友", "对象": "对象", "猫": "猫",
    "猫咪": "猫", "小猫": "猫", "狗": "狗", "小狗": "狗", "狗狗": "狗", "兔子": "兔子", "仓鼠": "仓鼠",
    "鹦鹉": "鹦鹉",
}
PETS: frozenset[str] = frozenset({"猫", "狗", "兔子", "仓鼠", "鹦鹉", "cat", "dog", "rabbit", "hamster", "parrot"})
FAMILY_EN: dict[str, str] = {
    "daughter": "kids", "son": "kids", "kid": "kids", "kids": "kids", "child": "kids", "children": "kids",
    "baby": "kids", "wife": "wife", "husband": "husband", "girlfriend": "girlfriend", "boyfriend": "boyfriend",
    "partner": "partner", "fiance": "fiance", "fiancee": "fiance", "cat": "cat", "cats": "cat", "kitten": "cat",
    "dog": "dog", "dogs": "dog", "puppy": "dog", "rabbit": "rabbit", "hamster": "hamster", "parrot": "parrot",
}

# --- places and companies ------------------------------------------------------------------------

#: "我在北京工作" names where the user works, not who employs them
CITIES_ZH: frozenset[str] = frozenset(
    {
        "北京", "上海", "广州", "深圳", "杭州", "成都", "重庆", "武汉", "南京", "西安", "天津", "苏州", "长沙",
        "郑州", "青岛", "厦门", "大连", "沈阳", "昆明", "合肥", "福州", "济南", "哈尔滨", "香港", "澳门", "台北",
        "国外", "海外", "美国", "日本", "英国", "德国", "法国", "加拿大", "澳洲", "新加坡", "老家", "外地", "本地",
        "家", "家里", "这里", "那里", "这边", "那边", "这", "那", "外面", "公司", "单位", "市区", "郊区",
    }
)
PLACE_SUFFIX_ZH: tuple[str, ...] = ("市", "省", "区", "县", "镇", "村", "路", "街", "国", "州", "边", "里")
#: words that end an English object phrase ("Google now", "Berlin last year", "a startup in Shenzhen")
EN_STOP_WORDS: frozenset[str] = frozenset(
    {
        "and", "but", "because", "since", "so", "now", "anymore", "again", "these", "this", "that", "last", "next",
        "in", "on", "for", "as", "when", "while", "although", "though", "if", "until", "then", "which", "who",
        "where", "with", "from", "at", "to", "every", "all", "too", "either", "right", "any", "a", "an", "lately",
        "recently", "after", "before", "nowadays", "already", "ever", "or", "than", "very", "much",
    }
)
#: objects that are people, pronouns or vague: no interest statement ("我喜欢你", "I love it")
NON_SUBJECTS: frozenset[str] = frozenset(
    {
        "你", "他", "她", "它", "他们", "她们", "你们", "这个", "那个", "这样", "那样", "这种", "那种", "这", "那",
        "自己", "大家", "人", "it", "them", "that", "this", "you", "him", "her", "us", "me", "myself", "those",
        "these", "everything", "nothing", "something", "anything", "everyone", "people", "one", "things", "what",
        "how", "your", "his", "my", "our", "their", "so", "too", "much", "here", "there", "to",
    }
)

#: schedule words -> subject (起床 / 睡觉 / 熬夜; waking up / bedtime / staying up late)
# the word table keeps several entries to a line (fmt: skip); one to a line it would fill a screen
SCHEDULE_ZH = {"起床": "起床", "起来": "起床", "起": "起床", "早起": "起床", "晚起": "起床", "睡懒觉": "起床",
                "睡觉": "睡觉", "睡": "睡觉", "上床": "睡觉", "入睡": "睡觉", "早睡": "睡觉", "晚睡": "睡觉",
                "熬夜": "熬夜", "夜猫子": "熬夜", "早起的人": "起床", "晨型人": "起床"}  # fmt: skip
# the word table keeps several entries to a line (fmt: skip); one to a line it would fill a screen
SCHEDULE_EN = {"bed": "bedtime", "sleep": "bedtime", "asleep": "bedtime", "turn in": "bedtime", "wake": "waking up",
                "get": "waking up", "gets": "waking up", "stay": "staying up late", "stays": "staying up late",
                "pull": "staying up late", "a night owl": "staying up late", "an early riser": "waking up",
                "a morning person": "waking up", "an early bird": "waking up"}  # fmt: skip
EN_NOT_EMPLOYERS = frozenset({"home", "night", "weekends", "the moment", "myself", "a living", "free", "night shifts"})

# fmt: on
