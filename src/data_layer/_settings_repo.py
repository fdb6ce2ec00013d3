"""Per-user settings (``system_settings``), validated against :class:`UserSettings` both ways."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from sqlalchemy import bindparam, select

from . import _validation as v
from ._dialect import insert_updating
from ._engine import Database
from ._errors import InvalidInputError
from ._tables import SystemSettingsTable
from ._types import utcnow
from ._user_settings import UserSettings

#: Read at the start of every chat turn: built once, so SQLAlchemy does not derive its cache key anew.
_STORED = select(SystemSettingsTable.settings).where(SystemSettingsTable.user_id == bindparam("uid"))


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden" and len(err["loc"]) == 2:
            section = UserSettings.model_fields[str(err["loc"][0])].annotation
            known = ", ".join(getattr(section, "model_fields", {}))
            parts.append(f"{where}: unknown setting (known: {known})")
        else:
            parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


class SettingsRepository:
    """Read and change one user's settings; a user with none stored gets the defaults.

    >>> s = await layer.settings.update(user_id="u1", patch={"memory": {"rounds": 2}})  # doctest: +SKIP
    >>> s.memory.rounds  # doctest: +SKIP
    2
    """

    def __init__(self, db: Database, *, defaults: UserSettings | None = None) -> None:
        self._db = db
        self.defaults = defaults or UserSettings()

    async def get(self, *, user_id: str | int) -> UserSettings:
        """The user's settings: the stored values over the defaults."""
        uid = v.user_id(user_id)
        stored = await self._db.quick_read(lambda conn: conn.scalar(_STORED, {"uid": uid}))  # every chat turn
        if stored is None:
            return self.defaults
        return self._merge(self.defaults, stored)

    async def put(self, *, user_id: str | int, settings: UserSettings) -> UserSettings:
        """Store the user's complete settings."""
        uid = v.user_id(user_id)
        if not isinstance(settings, UserSettings):
            raise InvalidInputError(f"settings must be a UserSettings, got {type(settings).__name__}")
        stmt = insert_updating(
            self._db.backend, SystemSettingsTable, conflict=["user_id"], update=["settings", "updated_at"]
        )
        async with self._db.write() as session:
            await session.execute(
                stmt, [{"user_id": uid, "settings": settings.model_dump(mode="json"), "updated_at": utcnow()}]
            )
        return settings

    async def update(self, *, user_id: str | int, patch: Mapping[str, Any]) -> UserSettings:
        """Change some settings, e.g. ``{"memory": {"rounds": 2}}``; unknown keys and bad values are refused."""
        if not isinstance(patch, Mapping):
            raise InvalidInputError("patch must be a mapping such as {'memory': {'rounds': 2}}")
        current = await self.get(user_id=user_id)
        return await self.put(user_id=user_id, settings=self._merge(current, patch))

    @staticmethod
    def _merge(base: UserSettings, patch: Mapping[str, Any]) -> UserSettings:
        data = base.model_dump(mode="json")
        for section, values in patch.items():
            if section not in data:
                raise InvalidInputError(f"unknown settings section {section!r}; use one of: {', '.join(data)}")
            if not isinstance(values, Mapping):
                raise InvalidInputError(f"settings section {section!r} must be a mapping")
            data[section] = {**data[section], **values}
        try:
            return UserSettings.model_validate(data)
        except ValidationError as exc:
            raise InvalidInputError(f"invalid settings: {_explain(exc)}") from None
