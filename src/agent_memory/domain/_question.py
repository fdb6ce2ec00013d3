"""Whether a sentence is a question by its mark: the one definition of the question marks.

Each reader adds its own words to this (a Chinese ``吗`` tail, an English ``do you``), but what counts
as a question mark, and where it must stand, is stated here.

>>> ends_as_question("你还记得吗？ "), ends_as_question("Really?"), ends_as_question("好的。")
(True, True, False)
"""

from __future__ import annotations

#: The characters that end a question: ASCII and full-width.
QUESTION_MARKS = "?？"
#: :data:`QUESTION_MARKS` as a regular-expression character class.
QUESTION_MARK_CLASS = f"[{QUESTION_MARKS}]"


def ends_as_question(sentence: str, *, trailing: str | None = None) -> bool:
    """Whether ``sentence``, with the characters ``trailing`` (default: whitespace) taken off its end,
    ends with a question mark."""
    return sentence.rstrip(trailing).endswith(tuple(QUESTION_MARKS))
