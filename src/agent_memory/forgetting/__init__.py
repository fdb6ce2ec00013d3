"""A user's explicit request to forget: heard, carried out, listed and undone.

>>> forget_request("忘了我跟你说过的关于前任的事").subject
'前任'
>>> done = await system.forget(Scope.of("u1", "xiaozhu"), "前任")  # doctest: +SKIP
>>> await system.unforget("u1", key=done.key)  # doctest: +SKIP
>>> undo_request("撤销刚才的遗忘").names_forgetting
True
"""

from ._forget import (
    BROAD_MIN_MATCHES,
    FORGETTING_FIELD,
    FORGETTING_PREFIX,
    FORGOTTEN_FIELD,
    BroadSubjectError,
    Forgetting,
    ForgottenMemory,
    forget,
    forgettings,
    forgotten_message_ids,
    is_forgotten,
    set_aside,
    too_broad,
    unforget,
)
from ._request import MAX_SUBJECT_CHARS, ForgetRequest, forget_request
from ._undo import UndoRequest, undo_request

__all__ = [
    "BROAD_MIN_MATCHES",
    "FORGETTING_FIELD",
    "FORGETTING_PREFIX",
    "FORGOTTEN_FIELD",
    "MAX_SUBJECT_CHARS",
    "BroadSubjectError",
    "ForgetRequest",
    "Forgetting",
    "ForgottenMemory",
    "UndoRequest",
    "forget",
    "forget_request",
    "forgettings",
    "forgotten_message_ids",
    "is_forgotten",
    "set_aside",
    "too_broad",
    "undo_request",
    "unforget",
]
