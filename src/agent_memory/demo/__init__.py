"""The demo's sample data (a user with two AI friends, Chinese and English memories)."""

from ._sample import DEMO_USER, FRIEND_HELPER, FRIEND_MENTOR, FRIEND_NAMES, Sample, sample

__all__ = ["DEMO_USER", "FRIEND_HELPER", "FRIEND_MENTOR", "FRIEND_NAMES", "Sample", "sample"]
