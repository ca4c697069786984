"""Text, number and JSON rules shared with JavaScript producers (docs/protocol.md#text-and-json).

Python's ``str.strip`` and ``\\d`` disagree with JavaScript, so the exact sets live here.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

__all__ = [
    "MAX_SAFE_INT",
    "DuplicateKeyError",
    "JSONSyntaxError",
    "is_blank",
    "is_safe_int",
    "is_trimmed",
    "js_dumps",
    "js_trim",
    "json_int",
    "loads_strict",
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
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


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
    escaped); only lone surrogates, which UTF-8 cannot carry, need the slow path.
    """
    try:
        return _encode(value).decode("utf-8")
    except UnicodeEncodeError:
        return _slow_dumps(value)


def _slow_dumps(value: Any) -> str:
    if isinstance(value, str):
        parts = _LONE_SURROGATE.split(value)
        marks = _LONE_SURROGATE.findall(value)
        out = [_encode(parts[0]).decode()[:-1]]
        for mark, part in zip(marks, parts[1:], strict=True):
            out.append(f"\\u{ord(mark):04x}")
            out.append(_encode(part).decode()[1:-1])
        out.append('"')
        return "".join(out)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_slow_dumps(k)}:{_slow_dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_slow_dumps(v) for v in value) + "]"
    return _encode(value).decode()


# --- JSON input (docs/protocol.md#json-numbers, docs/protocol.md#json-input)
# --------------------------------------------------------------


class JSONSyntaxError(ValueError):
    """The text is not strict JSON: syntax, NaN/Infinity tokens or a duplicate key."""

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


_decode = msgspec.json.Decoder().decode


class DuplicateKeyError(JSONSyntaxError):
    """The text is JSON except that an object holds a key twice (``key``)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {js_dumps(key)}")
        self.key = key


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


def _reject_constant(token: str) -> Any:
    raise JSONSyntaxError(f"{token} is not valid JSON")


#: The strict stdlib decoder, built on first use: the stdlib ``json`` package is imported only
#: when a text misses the fast path (start-up of a command that reads only such texts).
_strict_loader: Any = None


def loads_strict(data: bytes | str) -> Any:
    """Decode one JSON text, rejecting duplicate keys and NaN/Infinity tokens.

    Fast path: msgspec decodes and re-encodes; when the re-encoding reproduces the input byte
    for byte (every line our own writers emit), no key can have been dropped as a duplicate.
    Anything else goes through the strict stdlib decoder, which gives the exact verdict.

    Only :class:`JSONSyntaxError` ever escapes for bad input: whatever the fast path raises
    (msgspec's ``UnicodeDecodeError`` for invalid UTF-8 inside a string, ``RecursionError`` for
    deep nesting, out-of-range numbers) only sends the text to the strict path, and the strict
    path's own failures (invalid UTF-8, nesting, an integer longer than Python converts) are
    turned into :class:`JSONSyntaxError`.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    try:
        value = _decode(raw)
        if _encode(value) == raw:
            return value
    except Exception:  # any fast-path failure: the strict path gives the verdict
        pass
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JSONSyntaxError(f"invalid UTF-8 at byte {exc.start}", exc.start) from None
    if text.startswith("\ufeff"):
        raise JSONSyntaxError("unexpected byte order mark", 0)
    import json

    global _strict_loader
    if _strict_loader is None:
        _strict_loader = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_reject_constant)
    try:
        return _strict_loader.decode(text)
    except JSONSyntaxError:
        raise
    except json.JSONDecodeError as exc:
        raise JSONSyntaxError(f"{exc.msg} at character {exc.pos}", exc.pos) from None
    except RecursionError:
        raise JSONSyntaxError("JSON nesting is too deep") from None
    except ValueError as exc:  # e.g. an integer with more digits than int() converts
        raise JSONSyntaxError(f"invalid JSON number: {exc}") from None
    except Exception as exc:  # never let a decoder's internal error pass for a verdict
        raise JSONSyntaxError(f"JSON text could not be decoded: {exc}") from None
