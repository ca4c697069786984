"""The strict JSON reader (docs/protocol.md#json-numbers, docs/protocol.md#json-input):
:func:`loads_strict` and its one error type, :class:`JSONSyntaxError`.

A leaf, below every layer: the event-log reader, the stores, the host's validation, the HTTP
API and the command line all read untrusted JSON text through it. :func:`js_string` writes a
string as JavaScript's ``JSON.stringify`` does, lone surrogates included; the duplicate-key
message quotes the key with it, and :func:`schedlog.rules.text.js_dumps` writes strings with it
when msgspec cannot.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

__all__ = ["LONE_SURROGATE", "DuplicateKeyError", "JSONSyntaxError", "js_string", "loads_strict"]

_encode = msgspec.json.Encoder().encode
#: A lone surrogate (no UTF-8 form), escaped as ``\\udxxx`` wherever text is written.
LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def js_string(value: str) -> str:
    """``JSON.stringify(value)`` of a string: msgspec's escaping, which matches JavaScript's,
    and ``\\udxxx`` for each lone surrogate (UTF-8 cannot carry one)."""
    try:
        return _encode(value).decode("utf-8")
    except UnicodeEncodeError:
        pass
    parts = LONE_SURROGATE.split(value)
    marks = LONE_SURROGATE.findall(value)
    out = [_encode(parts[0]).decode()[:-1]]
    for mark, part in zip(marks, parts[1:], strict=True):
        out.append(f"\\u{ord(mark):04x}")
        out.append(_encode(part).decode()[1:-1])
    out.append('"')
    return "".join(out)


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
        super().__init__(f"duplicate key {js_string(key)}")
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
