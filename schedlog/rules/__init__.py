"""The pure rules layer: instants, zones, `at` input, rule arithmetic and cron
(docs/protocol.md#text-and-json–docs/rules.md#cron).

Nothing here reads the wall clock or does I/O beyond loading the bundled zone data. Every
function takes its clock sample (``now``) and decision time as epoch-ms integers.

The names below load lazily: importing one submodule (the instants, say) costs only that module.
"""

from typing import TYPE_CHECKING, Final

from schedlog._lazy import lazy_exports

if TYPE_CHECKING:
    from schedlog.absent import ABSENT as ABSENT
    from schedlog.rules.at import parse_at as parse_at
    from schedlog.rules.calendar import calendar_latest as calendar_latest
    from schedlog.rules.calendar import calendar_next as calendar_next
    from schedlog.rules.calendar import parse_daily as parse_daily
    from schedlog.rules.calendar import parse_weekly as parse_weekly
    from schedlog.rules.cron import CronRule as CronRule
    from schedlog.rules.cron import canonical_cron as canonical_cron
    from schedlog.rules.cron import cron_latest as cron_latest
    from schedlog.rules.cron import cron_next as cron_next
    from schedlog.rules.cron import parse_cron as parse_cron
    from schedlog.rules.decide import Decision as Decision
    from schedlog.rules.decide import decide as decide
    from schedlog.rules.instants import MAX_MS as MAX_MS
    from schedlog.rules.instants import MIN_MS as MIN_MS
    from schedlog.rules.instants import civil_from_days as civil_from_days
    from schedlog.rules.instants import days_from_civil as days_from_civil
    from schedlog.rules.instants import format_instant as format_instant
    from schedlog.rules.instants import iso_weekday as iso_weekday
    from schedlog.rules.instants import parse_canonical_instant as parse_canonical_instant
    from schedlog.rules.record import Record as Record
    from schedlog.rules.records import build_host_record as build_host_record
    from schedlog.rules.records import build_session_record as build_session_record
    from schedlog.rules.records import decode_host_record as decode_host_record
    from schedlog.rules.records import decode_legacy_record as decode_legacy_record
    from schedlog.rules.records import record_from_json as record_from_json
    from schedlog.rules.text import js_dumps as js_dumps
    from schedlog.rules.text import js_trim as js_trim
    from schedlog.rules.text import json_int as json_int
    from schedlog.rules.text import utf16_len as utf16_len
    from schedlog.rules.update import UpdateResult as UpdateResult
    from schedlog.rules.update import resolve_update as resolve_update
    from schedlog.rules.zones import Zone as Zone
    from schedlog.rules.zones import canonical_zone_name as canonical_zone_name
    from schedlog.rules.zones import check_time_zone as check_time_zone
    from schedlog.rules.zones import get_zone as get_zone

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
    "parse_at",
    "parse_canonical_instant",
    "parse_cron",
    "parse_daily",
    "parse_weekly",
    "record_from_json",
    "resolve_update",
    "utf16_len",
]

#: Each exported name -> the module that defines it, imported on first use.
_LAZY: Final = {
    "ABSENT": "schedlog.absent",
    "parse_at": "schedlog.rules.at",
    "calendar_latest": "schedlog.rules.calendar",
    "calendar_next": "schedlog.rules.calendar",
    "parse_daily": "schedlog.rules.calendar",
    "parse_weekly": "schedlog.rules.calendar",
    "CronRule": "schedlog.rules.cron",
    "canonical_cron": "schedlog.rules.cron",
    "cron_latest": "schedlog.rules.cron",
    "cron_next": "schedlog.rules.cron",
    "parse_cron": "schedlog.rules.cron",
    "Decision": "schedlog.rules.decide",
    "decide": "schedlog.rules.decide",
    "MAX_MS": "schedlog.rules.instants",
    "MIN_MS": "schedlog.rules.instants",
    "civil_from_days": "schedlog.rules.instants",
    "days_from_civil": "schedlog.rules.instants",
    "format_instant": "schedlog.rules.instants",
    "iso_weekday": "schedlog.rules.instants",
    "parse_canonical_instant": "schedlog.rules.instants",
    "Record": "schedlog.rules.record",
    "build_host_record": "schedlog.rules.records",
    "build_session_record": "schedlog.rules.records",
    "decode_host_record": "schedlog.rules.records",
    "decode_legacy_record": "schedlog.rules.records",
    "record_from_json": "schedlog.rules.records",
    "js_dumps": "schedlog.rules.text",
    "js_trim": "schedlog.rules.text",
    "json_int": "schedlog.rules.text",
    "utf16_len": "schedlog.rules.text",
    "UpdateResult": "schedlog.rules.update",
    "resolve_update": "schedlog.rules.update",
    "Zone": "schedlog.rules.zones",
    "canonical_zone_name": "schedlog.rules.zones",
    "check_time_zone": "schedlog.rules.zones",
    "get_zone": "schedlog.rules.zones",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
