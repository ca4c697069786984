"""Text, number and JSON rules shared with JavaScript producers (docs/protocol.md#text-and-json).

Python's ``str.strip`` and ``\\d`` disagree with JavaScript, so the exact sets live here.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from schedlog.strictjson import LONE_SURROGATE, js_string

__all__ = [
    "MAX_SAFE_INT",
    "is_blank",
    "is_safe_int",
    "is_trimmed",
    "js_dumps",
    "js_trim",
    "json_bytes",
    "json_int",
    "printable",
    "shown_value",
    "utf16_len",
]

MAX_SAFE_INT: Final = 2**53 - 1

# docs/protocol.md#trim: exactly the ECMAScript WhiteSpace + LineTerminator set.
JS_WHITESPACE: Final = (
    "\u0009\u000a\u000b\u000c\u000d\u0020\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
WHITESPACE_RUN: Final = re.compile(f"[{re.escape(JS_WHITESPACE)}]+")


def js_trim(value: str) -> str:
    """Trim like JavaScript's ``String.prototype.trim`` (docs/protocol.md#trim)."""
    return value.strip(JS_WHITESPACE)


def is_trimmed(value: str) -> bool:
    return value == value.strip(JS_WHITESPACE)


def is_blank(value: str) -> bool:
    return not value.strip(JS_WHITESPACE)


def utf16_len(value: str) -> int:
    """Length in UTF-16 code units: code points above U+FFFF count twice
    (docs/protocol.md#length)."""
    n = len(value)
    if value.isascii():
        return n
    return n + sum(1 for ch in value if ord(ch) > 0xFFFF)


def is_safe_int(value: object) -> bool:
    """True for a JSON integer value with |n| <= 2**53-1 (docs/protocol.md#json-numbers); booleans
    never count."""
    return json_int(value) is not None


def json_int(value: object) -> int | None:
    """The integer a JSON number denotes, when it is a safe integer; otherwise ``None``.

    ``300``, ``300.0`` and ``3e2`` are all 300; ``-0`` is 0; booleans and strings are not numbers.
    """
    if type(value) is int:
        return value if -MAX_SAFE_INT <= value <= MAX_SAFE_INT else None
    if type(value) is float:
        if value != value or value in (float("inf"), float("-inf")) or not value.is_integer():
            return None
        n = int(value)
        return n if -MAX_SAFE_INT <= n <= MAX_SAFE_INT else None
    return None


# --- JSON output (docs/protocol.md#json-output)
# -------------------------------------------------------------------

_encode = msgspec.json.Encoder().encode


#: The longest value a message shows whole (:func:`shown_value`).
SHOWN_MAX: Final = 64


def shown_value(value: str) -> str:
    """``value`` as a JSON string for an error message, cut to 64 characters (then ``…``)."""
    if len(value) <= SHOWN_MAX:
        return js_dumps(value)
    return js_dumps(value[:SHOWN_MAX]) + "\u2026"


def js_dumps(value: Any) -> str:
    """Serialize like ``JSON.stringify(value)``: compact, non-ASCII as itself, keys in order.

    msgspec already matches JavaScript's escaping (lower-case ``\\u00xx``, ``/`` and U+2028 not
    escaped); only lone surrogates, which UTF-8 cannot carry, need the slow path
    (:func:`schedlog.strictjson.js_string` writes such a string).
    """
    try:
        return _encode(value).decode("utf-8")
    except UnicodeEncodeError:
        return _slow_dumps(msgspec.to_builtins(value))


def printable(value: str) -> str:
    """``value`` with each lone surrogate written as ``\\udxxx``, as JSON output writes it: text
    that a UTF-8 terminal or file can take (the CLI's tables)."""
    if value.isascii():
        return value
    return LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", value)


def json_bytes(value: Any) -> bytes:
    """``value`` (Structs, dicts, lists...) as compact UTF-8 JSON, a lone surrogate as ``\\udxxx``.

    The one encoder of every output edge (HTTP answers, SSE, webhook bodies, CLI JSON): msgspec's
    own encoder raises ``UnicodeEncodeError`` on a lone surrogate, which JSON input may carry
    (docs/protocol.md#json-output).
    """
    try:
        return _encode(value)
    except UnicodeEncodeError:
        return _slow_dumps(msgspec.to_builtins(value)).encode("utf-8")


def _slow_dumps(value: Any) -> str:
    if isinstance(value, str):
        return js_string(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_slow_dumps(k)}:{_slow_dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_slow_dumps(v) for v in value) + "]"
    return _encode(value).decode()
