"""The demo's sample: one user with two AI friends, Chinese and English memories and messages.

Written by the project for the demo and the tests; dates are relative to ``now`` so that recency and
phrases such as "last week" behave the same whenever the demo runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from data_layer import NewMemory, NewMessage

DEMO_USER = "demo-user"
FRIEND_HELPER = "xiaozhu"  # 小助手: a companion
FRIEND_MENTOR = "mentor"  # 职场导师: a career mentor
FRIEND_NAMES = {FRIEND_HELPER: "小助手", FRIEND_MENTOR: "职场导师"}


@dataclass(frozen=True, slots=True)
class Sample:
    """What the demo loads for :data:`DEMO_USER`."""

    memories: list[NewMemory]
    messages: list[NewMessage]


def sample(now: datetime) -> Sample:
    """The demo sample with timestamps relative to ``now`` (timezone-aware)."""

    def ago(days: float) -> datetime:
        return now - timedelta(days=days)

    memories = [
        # Profile: shared by every AI friend of the user.
        NewMemory(
            memory_key="profile-job",
            memory_type="profile",
            summary="职业: 互联网公司产品经理",
            content="用户是一家互联网公司的产品经理，负责数据平台产品。",
            created_at=ago(60),
            metadata={"topic": "职业"},
        ),
        NewMemory(
            memory_key="profile-movies",
            memory_type="profile",
            summary="兴趣: 喜欢科幻电影和悬疑小说，不喜欢恐怖片",
            content="用户喜欢科幻电影（最爱《星际穿越》）和悬疑小说，不喜欢恐怖片。",
            created_at=ago(58),
            metadata={"topic": "兴趣"},
        ),
        NewMemory(
            memory_key="pref-answer-format",
            memory_type="user_preference",
            summary="Answer format: conclusion first, then details",
            content="The user asked for answers that state the conclusion first, then the details, in short bullets.",
            created_at=ago(40),
        ),
        NewMemory(
            memory_key="profile-allergy",
            memory_type="profile",
            summary="Allergic to peanuts",
            content="The user mentioned a peanut allergy when ordering food; avoid suggesting dishes with peanuts.",
            created_at=ago(35),
            metadata={"topic": "health"},
        ),
        # Events with the career mentor only.
        NewMemory(
            memory_key="event-report-pressure",
            memory_type="event",
            friend_id=FRIEND_MENTOR,
            summary="工作压力大，正在准备重要的项目汇报",
            content="用户提到工作压力大，下周要向管理层做季度项目汇报，担心数据准备不充分。",
            created_at=ago(6),
        ),
        NewMemory(
            memory_key="event-late-nights",
            memory_type="event",
            friend_id=FRIEND_MENTOR,
            summary="最近熬夜较多，担心影响工作状态",
            content="用户说最近为了赶汇报材料经常熬夜到凌晨两点，担心影响白天的工作状态。",
            created_at=ago(4),
        ),
        NewMemory(
            memory_key="db-config-001",
            memory_type="command_output",
            friend_id=FRIEND_MENTOR,
            summary="MySQL 主从配置: host localhost, port 3306",
            content='{"host": "localhost", "port": 3306, "user": "report", "database": "analytics"}',
            created_at=ago(12),
            metadata={"format": "json", "engine": "mysql"},
        ),
        NewMemory(
            memory_key="cmd-001",
            memory_type="command_output",
            friend_id=FRIEND_MENTOR,
            summary="训练命令: python train.py --epochs 100",
            content="python train.py --epochs 100",
            created_at=ago(9),
            metadata={"language": "shell"},
        ),
        # Events with the companion only: private to that friend.
        NewMemory(
            memory_key="event-breakup",
            memory_type="event",
            friend_id=FRIEND_HELPER,
            summary="用户和女朋友分手了，心情低落",
            content="用户说上个月和女朋友分手了，这几周心情一直很低落，晚上睡不好。",
            created_at=ago(20),
        ),
        NewMemory(
            memory_key="event-marathon",
            memory_type="event",
            friend_id=FRIEND_HELPER,
            summary="Signed up for the city half marathon in May",
            content="The user signed up for the city half marathon in May and trains three evenings a week.",
            created_at=ago(15),
        ),
    ]
    messages = [
        NewMessage(
            role="user",
            content="最近工作压力好大，下周要做季度汇报。",
            friend_id=FRIEND_MENTOR,
            created_at=ago(6),
        ),
        NewMessage(
            role="assistant",
            content="听起来任务很重。先把汇报的核心结论列出来，再准备数据支撑。",
            friend_id=FRIEND_MENTOR,
            created_at=ago(6) + timedelta(minutes=1),
        ),
        NewMessage(role="user", content="这几天一直熬夜到两点。", friend_id=FRIEND_MENTOR, created_at=ago(4)),
        NewMessage(
            role="assistant",
            content="熬夜会影响白天的状态，试试把材料拆成小块，每天固定时间收工。",
            friend_id=FRIEND_MENTOR,
            created_at=ago(4) + timedelta(minutes=1),
        ),
        NewMessage(
            role="user",
            content="I broke up with my girlfriend last month.",
            friend_id=FRIEND_HELPER,
            created_at=ago(20),
        ),
        NewMessage(
            role="assistant",
            content="I'm sorry to hear that. Do you want to talk about how you're feeling?",
            friend_id=FRIEND_HELPER,
            created_at=ago(20) + timedelta(minutes=1),
        ),
        NewMessage(
            role="user",
            content="I signed up for the half marathon in May!",
            friend_id=FRIEND_HELPER,
            created_at=ago(15),
        ),
        NewMessage(
            role="assistant",
            content="That's great news! How many evenings a week will you train?",
            friend_id=FRIEND_HELPER,
            created_at=ago(15) + timedelta(minutes=1),
        ),
    ]
    return Sample(memories=memories, messages=messages)
