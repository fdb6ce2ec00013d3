"""What makes a text a question by its mark: the one definition of the question marks.

The search index flags a memory that asks something (``IndexRow.asks``, in SQL); the readers of
sentences (memory formation, forget requests, time lapses, the recall's intent) ask whether a
sentence ends as a question. Each adds its own words (a Chinese ``吗`` tail, an English ``do you``), but
which characters are question marks is stated here.

>>> ends_as_question("你还记得吗？ "), ends_as_question("Really?"), ends_as_question("好的。")
(True, True, False)
"""

from __future__ import annotations

#: The question marks: ASCII, full width, small and Arabic. Only the ASCII one also appears in text that
#: asks nothing (a link's ``page?id=3``); the others always ask.
QUESTION_MARKS: tuple[str, ...] = ("?", "？", "﹖", "؟")
#: :data:`QUESTION_MARKS` as a regular-expression character class.
QUESTION_MARK_CLASS = "[" + "".join(QUESTION_MARKS) + "]"


def ends_as_question(sentence: str, *, trailing: str | None = None) -> bool:
    """Whether ``sentence``, with the characters ``trailing`` (default: whitespace) taken off its end,
    ends with a question mark."""
    return sentence.rstrip(trailing).endswith(QUESTION_MARKS)
