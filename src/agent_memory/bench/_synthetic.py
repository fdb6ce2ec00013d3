"""A deterministic synthetic zh+en memory corpus for load and latency benchmarks."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta

from data_layer import PROFILE_TYPES, NewMemory

_ZH_SUBJECTS = [
    "数据库",
    "项目汇报",
    "旅行计划",
    "健身",
    "读书会",
    "咖啡",
    "科幻电影",
    "家庭聚餐",
    "搬家",
    "面试",
    "预算",
    "周报",
    "服务器",
    "部署",
    "论文",
    "音乐会",
    "马拉松",
    "体检",
    "装修",
    "猫粮",
]
_ZH_ACTIONS = ["讨论了", "决定", "计划", "提醒我", "记录了", "比较了", "完成了", "推迟了", "预订了", "担心"]
_ZH_DETAILS = [
    "下周三之前要准备好材料",
    "预算控制在五千元以内",
    "需要和同事确认时间",
    "地点改到了杭州",
    "更喜欢安静一点的地方",
    "第二版方案效果更好",
    "要提前一天提醒",
    "配置文件放在共享盘",
    "端口改成了 5432",
    "记得带上护照",
]
_EN_SUBJECTS = [
    "database migration",
    "quarterly report",
    "trip to Kyoto",
    "running plan",
    "book club",
    "coffee beans",
    "sci-fi movie night",
    "family dinner",
    "apartment move",
    "job interview",
    "monthly budget",
    "server outage",
    "deployment checklist",
    "research paper",
    "jazz concert",
    "half marathon",
]
_EN_ACTIONS = ["discussed", "decided on", "planned", "asked to remember", "compared", "finished", "postponed"]
_EN_DETAILS = [
    "before next Wednesday",
    "under a budget of 500 dollars",
    "with the platform team",
    "moved to Friday evening",
    "prefers the quieter option",
    "the second draft worked better",
    "needs a reminder the day before",
]
_TYPES = ["general", "event", "profile", "user_preference", "command_output"]


def synthetic_memories(
    count: int, *, seed: int = 7, start: datetime, friends: int = 3, key_prefix: str = "syn"
) -> Iterator[NewMemory]:
    """``count`` memories, about half Chinese and half English, spread over the year before ``start``."""
    rng = random.Random(seed)
    for i in range(count):
        if i % 2 == 0:
            subject = rng.choice(_ZH_SUBJECTS)
            summary = f"{rng.choice(_ZH_ACTIONS)}{subject}"
            content = f"用户{summary}，{rng.choice(_ZH_DETAILS)}。另外{rng.choice(_ZH_DETAILS)}。（记录 {i}）"
        else:
            subject = rng.choice(_EN_SUBJECTS)
            summary = f"{rng.choice(_EN_ACTIONS)} the {subject}"
            content = f"The user {summary}, {rng.choice(_EN_DETAILS)}; also {rng.choice(_EN_DETAILS)} (note {i})."
        memory_type = rng.choice(_TYPES)
        friend = None if memory_type in PROFILE_TYPES else f"friend-{rng.randrange(friends)}"
        yield NewMemory(
            memory_key=f"{key_prefix}-{i:07d}",
            content=content,
            summary=summary,
            memory_type=memory_type,
            friend_id=friend,
            created_at=start - timedelta(minutes=rng.randrange(365 * 24 * 60)),
        )


def synthetic_queries(count: int, *, seed: int = 11) -> list[str]:
    """Search queries over the same vocabulary, mixed Chinese and English."""
    rng = random.Random(seed)
    queries = []
    for i in range(count):
        if i % 2 == 0:
            queries.append(f"之前{rng.choice(_ZH_ACTIONS)}的{rng.choice(_ZH_SUBJECTS)}")
        else:
            queries.append(f"what did we say about the {rng.choice(_EN_SUBJECTS)}")
    return queries
