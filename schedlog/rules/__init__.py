"""The pure rules layer: instants, zones, `at` input, rule arithmetic and cron
(docs/protocol.md#text-and-json–docs/rules.md#cron).

Nothing here reads the wall clock or does I/O beyond loading the bundled zone data. Every
function takes its clock sample (``now``) and decision time as epoch-ms integers.
"""

from schedlog.absent import ABSENT
from schedlog.rules.at import parse_at
from schedlog.rules.calendar import calendar_latest, calendar_next, parse_daily, parse_weekly
from schedlog.rules.cron import CronRule, canonical_cron, cron_latest, cron_next, parse_cron
from schedlog.rules.decide import Decision, decide
from schedlog.rules.instants import (
    MAX_MS,
    MIN_MS,
    civil_from_days,
    days_from_civil,
    format_instant,
    iso_weekday,
    parse_canonical_instant,
)
from schedlog.rules.record import Record
from schedlog.rules.records import (
    build_host_record,
    build_session_record,
    decode_host_record,
    decode_legacy_record,
    record_from_json,
)
from schedlog.rules.text import js_dumps, js_trim, json_int, loads_strict, utf16_len
from schedlog.rules.update import UpdateResult, resolve_update
from schedlog.rules.zones import Zone, canonical_zone_name, check_time_zone, get_zone

__all__ = [
    "ABSENT",
    "MAX_MS",
    "MIN_MS",
    "CronRule",
    "Decision",
    "Record",
    "UpdateResult",
    "Zone",
    "build_host_record",
    "build_session_record",
    "calendar_latest",
    "calendar_next",
    "canonical_cron",
    "canonical_zone_name",
    "check_time_zone",
    "civil_from_days",
    "cron_latest",
    "cron_next",
    "days_from_civil",
    "decide",
    "decode_host_record",
    "decode_legacy_record",
    "format_instant",
    "get_zone",
    "iso_weekday",
    "js_dumps",
    "js_trim",
    "json_int",
    "loads_strict",
    "parse_at",
    "parse_canonical_instant",
    "parse_cron",
    "parse_daily",
    "parse_weekly",
    "record_from_json",
    "resolve_update",
    "utf16_len",
]
