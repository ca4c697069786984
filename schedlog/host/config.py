"""Host configuration (docs/protocol.md#history): delivery-history retention, validated at
start-up."""

from __future__ import annotations

from typing import Final, NamedTuple

from schedlog.rules.text import json_int

__all__ = [
    "DEFAULT_HISTORY_DAYS",
    "DEFAULT_HISTORY_RECORDS",
    "ConfigError",
    "Retention",
    "retention",
]

DEFAULT_HISTORY_DAYS: Final = 30
DEFAULT_HISTORY_RECORDS: Final = 200
MAX_HISTORY_DAYS: Final = 3650
MAX_HISTORY_RECORDS: Final = 10_000


class ConfigError(ValueError):
    """A configuration value outside its allowed range: the service refuses to start."""


class Retention(NamedTuple):
    """How much delivery history each task keeps: an age window in days, counted back from the
    newest record's ``deliveredAt``, and a maximum record count."""

    days: int = DEFAULT_HISTORY_DAYS
    records: int = DEFAULT_HISTORY_RECORDS

    def to_json(self) -> dict[str, int]:
        return {"days": self.days, "records": self.records}


def retention(
    days: object = DEFAULT_HISTORY_DAYS, records: object = DEFAULT_HISTORY_RECORDS
) -> Retention:
    """A validated :class:`Retention`: ``days`` an integer 1-3650, ``records`` 1-10000.

    Raises :class:`ConfigError` naming the key (``deliveryHistoryDays`` /
    ``deliveryHistoryRecords``) and the bad value.
    """
    d = json_int(days)
    if d is None or not 1 <= d <= MAX_HISTORY_DAYS:
        raise ConfigError(
            f"deliveryHistoryDays must be an integer from 1 through 3650, not {days!r}"
        )
    r = json_int(records)
    if r is None or not 1 <= r <= MAX_HISTORY_RECORDS:
        raise ConfigError(
            f"deliveryHistoryRecords must be an integer from 1 through 10000, not {records!r}"
        )
    return Retention(d, r)
