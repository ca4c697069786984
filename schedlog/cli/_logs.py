"""The implementation of ``schedlog validate``, and what ``replay`` (:mod:`schedlog.cli._replay`)
and ``repair`` (:mod:`schedlog.cli._repair`) share with it: the check of one log
(docs/cli.md#schedlog).

:mod:`schedlog.cli.logs_cmd` holds only the argparse wiring and imports this module when one of
its commands runs; it passes in the function that reads a log (``read_log``), so this module never
imports the command module back.

These commands never deliver reminders. ``validate`` and ``replay`` only read; ``repair`` only
truncates a torn tail, and never touches a log with a corrupt complete line. Output is the
JSON Lines of docs/cli.md#schedlog with ``--json`` or whenever stdout is not a terminal, and a human
table on a terminal. Exit status (docs/cli.md#exit-status): 0 success, 1 a checked file failed,
2 a usage error (with ``--json``, as an ``{"error"}`` line on stdout).
"""

from __future__ import annotations

import argparse
import atexit
import errno
import gc
import os
import stat
import sys
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, Final, TextIO

import msgspec

from schedlog.cli._split import fork_map, fork_split, split_available, usable_cores
from schedlog.cli.common import parse_request_instant, wants_json, write_json_line
from schedlog.collector import collector_paused
from schedlog.eventlog.errors import CorruptLogError
from schedlog.eventlog.reader import LogContents
from schedlog.eventlog.reader import read_log as _read_log
from schedlog.fold.state import FoldState
from schedlog.invariant.fastcheck import fast_check
from schedlog.invariant.logs import validate_log
from schedlog.invariant.small_check import SMALL_LOG, SmallSummary, small_summary
from schedlog.rules.text import js_dumps

__all__ = [
    "POOL_MIN",
    "PROGRESS_THRESHOLD",
    "LogCheck",
    "LogReader",
    "StoreValidator",
    "check_session_log",
    "cmd_validate",
    "error_value",
    "human_failure",
    "log_path_error",
    "parse_at",
    "read_summary",
    "table",
    "usage_error",
    "validate_report",
    "wants_json",
]

#: More files than this and ``validate`` reports its progress on stderr.
PROGRESS_THRESHOLD: Final = 20

#: The ``--store`` hook: ``(path, backend or None) -> the docs/cli.md#validate store report``
#: (``{"path","kind":"store","ok","tasks","error"?}``). The host work supplies it through
#: :func:`schedlog.cli.logs_cmd.register`; until then ``--store`` is a usage error.
StoreValidator = Callable[[str, str | None], dict[str, Any]]
#: Reads one session log for the commands: ``path -> LogContents`` (``OSError`` when it cannot).
LogReader = Callable[[str], LogContents]


def read_summary(path: str) -> LogContents:
    """A summary read (:func:`schedlog.eventlog.reader.read_log` with ``keep_events=False``):
    the commands only report and fold, so only the ``schedule/change`` events are kept."""
    return _read_log(path, keep_events=False)


# --- checking one log -------------------------------------------------------------------------


class LogCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of reading and folding one session log."""

    path: str
    contents: LogContents | None = None  #: None when the file could not be read
    state: FoldState | None = None  #: None unless the log is valid
    error: CorruptLogError | None = None
    read_error: str | None = None
    #: ``session_log_not_regular`` or ``session_log_unreadable`` with ``read_error``
    read_code: str = "session_log_unreadable"
    #: With ``rendered=True`` and the fast path: the JSON text of the active records' list,
    #: as :func:`schedlog.invariant.fastcheck.fast_check` gives it (``replay`` prints it)
    rendered: bytes | None = None

    @property
    def ok(self) -> bool:
        return self.state is not None


def check_session_log(
    path: str, read_log: LogReader | None = None, *, split: bool = True, rendered: bool = False
) -> LogCheck:
    """Read ``path`` with ``read_log`` and fold its owned suffix, without modifying it.

    ``read_log`` None is the summary read (:func:`read_summary`), tried after its fast path:
    :func:`schedlog.invariant.fastcheck.fast_check` reads and folds a log it is sure is valid
    in chunks, with the same result; anything else it leaves to the summary read and
    :func:`~schedlog.invariant.logs.validate_log`, which give every verdict. The contents of a
    fast check keep no ``changes``: they were folded as they were read.

    The cyclic garbage collector stays paused for the read and the fold: both only build
    acyclic values that all survive, which it would otherwise traverse again and again. On a
    machine with a second core, the fast path checks the second half of a long log in a child
    process (:mod:`schedlog.cli._split`), unless ``split`` is False. With ``rendered``, a fast
    check also keeps the JSON form of the active records (:attr:`LogCheck.rendered`).
    """
    with collector_paused():
        return _check(path, read_log, split and split_available(), rendered)


def _check(path: str, read_log: LogReader | None, split: bool, rendered: bool) -> LogCheck:
    try:
        if read_log is None:
            forms: list[bytes] | None = [] if rendered else None
            fast = fast_check(path, split=fork_split if split else None, rendered=forms)
            if fast is not None:
                text = forms[0] if forms else None
                return LogCheck(path=path, contents=fast[0], state=fast[1], rendered=text)
            read_log = read_summary
        contents = read_log(path)
    except OSError as exc:
        code = "session_log_unreadable"
        if exc.errno in (errno.EISDIR, errno.ENXIO, errno.ELOOP):
            code = "session_log_not_regular"
        message = f"cannot read {js_dumps(path)}: {exc.strerror or exc}"
        return LogCheck(path=path, read_error=message, read_code=code)
    try:
        state = validate_log(contents)
    except CorruptLogError as exc:
        return LogCheck(path=path, contents=contents, error=exc)
    return LogCheck(path=path, contents=contents, state=state)


def error_value(check: LogCheck) -> dict[str, Any]:
    if check.read_error is not None:
        return {"code": check.read_code, "message": check.read_error}
    exc = check.error
    assert exc is not None
    message = exc.message if exc.path == "$" else f"{exc.message} - at `{exc.path}`"
    return {"code": exc.code, "message": message, "line": exc.line}


def validate_report(check: LogCheck) -> dict[str, Any]:
    """The docs/cli.md#validate session-log report."""
    contents = check.contents
    header = contents.header if contents is not None else None
    report: dict[str, Any] = {
        "path": check.path,
        "kind": "session-log",
        "ok": check.ok,
        "sessionId": header.session_id if header is not None else None,
        "events": contents.event_count if contents is not None else 0,
        "seedLength": header.seed_length if header is not None else (0 if check.ok else None),
        "tornTail": bool(contents.torn_tail) if contents is not None else False,
        "active": check.state.active_count if check.state is not None else None,
    }
    if not check.ok:
        report["error"] = error_value(check)
    return report


# --- output helpers ---------------------------------------------------------------------------


def usage_error(args: argparse.Namespace, message: str, code: str = "invalid_request") -> int:
    """Exit status 2 (docs/cli.md#exit-status): with ``--json`` the ``{"error"}`` line on
    stdout, else the usage and ``PROG: error: MESSAGE`` on stderr."""
    if args.json:
        write_json_line({"error": {"code": code, "message": message}})
        return 2
    parser: argparse.ArgumentParser = args.logs_parser
    parser.print_usage(sys.stderr)
    suffix = "" if code == "invalid_request" else f" ({code})"
    print(f"{parser.prog}: error: {message}{suffix}", file=sys.stderr)
    return 2


def log_path_error(args: argparse.Namespace) -> int | None:
    """Exit 2 unless ``--log`` names a regular file (or a FIFO: read as it comes)."""
    try:
        mode = os.stat(args.log).st_mode
    except FileNotFoundError:
        return usage_error(args, f"no such file: --log {js_dumps(args.log)}")
    except OSError as exc:
        message = f"cannot read --log {js_dumps(args.log)}: {exc.strerror or exc}"
        return usage_error(args, message, "session_log_unreadable")
    if stat.S_ISDIR(mode):
        message = f"--log {js_dumps(args.log)} is a directory, not a session log file"
        return usage_error(args, message, "session_log_not_regular")
    return None


def table(rows: list[tuple[str, ...]], out: TextIO) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        out.write("  ".join(cells).rstrip() + "\n")


def _location(exc: CorruptLogError) -> str:
    where = f"line {exc.line}" if exc.line is not None else "header"
    if exc.offset is not None:
        where += f" (byte {exc.offset})"
    return where


def human_failure(check: LogCheck) -> str:
    if check.read_error is not None:
        return check.read_error
    exc = check.error
    assert exc is not None
    return f"{_location(exc)}: {exc.message} - at `{exc.path}`"


def parse_at(text: str) -> int:
    """The ``--at`` request instant in epoch ms (docs/protocol.md#batch); the one place it is
    parsed."""
    return parse_request_instant(text, "--at")


# --- validate ---------------------------------------------------------------------------------


def _walk(paths: list[str]) -> Iterator[str]:
    for name in paths:
        if os.path.isdir(name):
            yield from sorted(folder_logs(name))
        else:
            yield name


#: The errors ``pathlib`` ignores in ``Path.is_file`` and ``Path.is_dir`` (a missing entry, a
#: symlink loop, ...): such an entry is neither.
_IGNORED_ERRNOS: Final = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})


def folder_logs(name: str) -> list[str]:
    """The ``*.jsonl`` regular files under the folder ``name`` (unsorted), each named as
    ``str(p) for p in Path(name).rglob("*.jsonl") if p.is_file()`` names it, with one
    ``os.scandir`` a folder: the pathlib walk cost as much as checking 150 small logs
    (docs/decisions.md, "Validating many logs: the walk, one read a log"). As there, a
    subfolder is entered unless it is a symlink, one that cannot be listed holds nothing, and a
    symlink to a regular file counts. ``tests/cli/test_logs_walk.py`` compares the two."""
    # As pathlib spells it: empty and "." parts dropped, ".." kept, "//" kept at the start.
    root = "//" if name[:2] == "//" and name[2:3] != "/" else "/" if name[:1] == "/" else ""
    top = root + "/".join(part for part in name.split("/") if part not in ("", "."))
    found: list[str] = []
    _scan(top, found)
    return found


def _scan(folder: str, found: list[str]) -> None:
    try:
        with os.scandir(folder or ".") as listing:
            entries = list(listing)
    except PermissionError:
        return
    prefix = "" if not folder else folder if folder.endswith("/") else folder + "/"
    for entry in entries:
        if _entry_is(entry.is_dir, follow=False):
            _scan(prefix + entry.name, found)
        elif entry.name.endswith(".jsonl") and _entry_is(entry.is_file, follow=True):
            found.append(prefix + entry.name)


def _entry_is(test: Callable[..., bool], *, follow: bool) -> bool:
    try:
        return test(follow_symlinks=follow)
    except OSError as exc:
        if exc.errno not in _IGNORED_ERRNOS:
            raise
        return False


class _Progress:
    """``checked k/N files`` on stderr: rewritten in place on a terminal, JSON lines otherwise."""

    def __init__(self, total: int, err: TextIO) -> None:
        self.total = total
        self.err = err
        self.enabled = total > PROGRESS_THRESHOLD
        self.tty = err.isatty()
        self.step = max(1, total // 10)

    def due(self, done: int) -> bool:
        """Whether :meth:`update` writes a line for ``done`` files."""
        if not self.enabled:
            return False
        return self.tty or done % self.step == 0 or done == self.total

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        if self.tty:
            end = "\n" if done == self.total else ""
            self.err.write(f"\rschedlog validate: checked {done}/{self.total} files{end}")
            self.err.flush()
        elif done % self.step == 0 or done == self.total:
            write_json_line(
                {"event": "validate.progress", "checked": done, "total": self.total}, self.err
            )


def cmd_validate(
    args: argparse.Namespace, validate_store: StoreValidator | None, read_log: LogReader | None
) -> int:
    out: TextIO = sys.stdout
    if not args.logs and args.store is None:
        return usage_error(args, "give at least one LOG (file or directory) or --store")
    if args.backend is not None and args.store is None:
        return usage_error(args, "--backend needs --store")
    if args.store is not None and validate_store is None:
        return usage_error(args, "--store is not supported by this build")
    missing = [name for name in args.logs if not os.path.exists(name)]
    if missing:
        return usage_error(args, f"no such file or directory: LOG {js_dumps(missing[0])}")
    files: list[str] = []
    for name in args.logs:
        found = list(_walk([name]))
        if not found:
            message = f"LOG {js_dumps(name)} is a folder that holds no *.jsonl session log"
            return usage_error(args, message)
        files += found
    as_json = wants_json(args, out)
    failed = False
    if args.store is None:
        _freeze_at_exit()
    else:
        assert validate_store is not None
        store_report = validate_store(args.store, args.backend)
        failed = failed or not store_report.get("ok", False)
        if as_json:
            write_json_line(store_report, out)
        else:
            where = store_report.get("path", args.store)  # a URL without its password
            if store_report.get("ok"):
                out.write(f"OK    {where}  store, {store_report.get('tasks')} task(s)\n")
            else:
                error = store_report.get("error") or {}
                out.write(f"FAIL  {where}  store: {error.get('code')}: {error.get('message')}\n")
                for bad in store_report.get("invalidRecords", ()):
                    out.write(f"      {where}  task {bad['id']!r}: {bad['message']}\n")
    failed = _show(files, read_log, as_json, out) or failed
    return 1 if failed else 0


def _show(files: list[str], read_log: LogReader | None, as_json: bool, out: TextIO) -> bool:
    """Check ``files`` and write what ``validate`` shows for them (with the progress on
    stderr): whether one failed."""
    failed = False
    progress = _Progress(len(files), sys.stderr)
    rows: list[tuple[str, ...]] = [("RESULT", "PATH", "SESSION", "EVENTS", "ACTIVE", "NOTE")]
    lines: list[str] = []  # the reports' JSON not written yet (write_json_line's lines)
    at_once = 1 if out.isatty() else _LINES_AT_ONCE
    for done, (ok, shown) in enumerate(_validated(files, read_log, as_json), start=1):
        failed = failed or not ok
        if not as_json:
            rows.append(shown)
        elif len(lines) + 1 < at_once and not progress.due(done):
            lines.append(shown)
        else:  # written before the progress line that counts them, as one line each was
            lines.append(shown)
            out.write("\n".join(lines) + "\n")
            lines.clear()
        progress.update(done)
    if lines:
        out.write("\n".join(lines) + "\n")
    if not as_json and files:
        table(rows, out)
        bad = sum(1 for row in rows[1:] if row[0] == "FAIL")
        out.write(f"{len(files)} session log(s) checked, {bad} failed\n")
    return failed


_FREEZE_REGISTERED: Final[list[bool]] = [False]


def _freeze_at_exit() -> None:
    """At exit, move every object into the collector's permanent generation
    (``gc.freeze``), once a process: the interpreter's collections while it shuts down then
    no longer walk the modules and what they hold, about 8 ms of the exit of ``validate``
    (docs/decisions.md, "validate DIR: a small log's report from its summary"). Only the logs
    are read (no ``--store``): nothing else is open, and the standard streams are flushed at
    exit anyway."""
    if not _FREEZE_REGISTERED[0]:
        _FREEZE_REGISTERED[0] = True
        atexit.register(gc.freeze)


#: ``validate --json`` writes the reports of this many files at once (or fewer, before each
#: progress line): one ``write`` a report cost about 1 us of 130 for a small log.
_LINES_AT_ONCE: Final = 64

#: At least this many files, and ``validate`` checks them in child processes, one a core.
POOL_MIN: Final = 8
_MAX_WORKERS: Final = 8


def _validated(
    files: list[str], read_log: LogReader | None, as_json: bool
) -> Iterator[tuple[bool, Any]]:
    """Each file's verdict and what ``validate`` shows for it (its report, or its table row),
    in order: with more than one core and :data:`POOL_MIN` files or more, computed in runs by
    this process and one child process for each other core (:func:`schedlog.cli._split.fork_map`),
    each checking a log in one process; the output is the same either way."""
    cores = usable_cores()
    if read_log is not None or cores < 2 or len(files) < POOL_MIN:
        return (_validate_one(name, read_log, as_json, True) for name in files)
    work = partial(_validate_one, read_log=None, as_json=as_json, split=False)
    return fork_map(work, files, min(cores, _MAX_WORKERS))


def _validate_one(
    name: str, read_log: LogReader | None, as_json: bool, split: bool
) -> tuple[bool, Any]:
    """The verdict of the log ``name``, and its report's JSON text or its table row: the JSON
    is written in the process that checked the log (a text is faster to send than a dict).

    A small valid log, read with the summary read, is reported from its
    :func:`~schedlog.invariant.small_check.small_summary` (the same report: docs/decisions.md,
    "validate DIR: a small log's report from its summary"); anything else, and any log that
    summary is not sure of, from :func:`check_session_log`."""
    if read_log is None:
        data = _small_file(name)
        summary = small_summary(data) if data is not None else None
        if summary is not None:
            report = _summary_report(name, summary)
            return True, js_dumps(report) if as_json else _summary_row(report, summary)
    check = check_session_log(name, read_log, split=split)
    return check.ok, js_dumps(validate_report(check)) if as_json else _human_validate_row(check)


#: Opened without waiting (a FIFO without a writer opens at once, and is not read here): no
#: effect on a regular file.
_OPEN_FLAGS: Final = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


def _small_file(name: str) -> bytes | None:
    """All of the regular file ``name`` when it is shorter than
    :data:`~schedlog.invariant.small_check.SMALL_LOG`, in one ``os.read`` of its size and one
    byte more; None when it is not such a file, grew while it was read, or cannot be read (the
    whole check then reads it again and reports what it finds; a FIFO is only opened by it)."""
    try:
        fd = os.open(name, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size >= SMALL_LOG:
            return None
        data = os.read(fd, info.st_size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= info.st_size else None  # None: it grew meanwhile


def _summary_report(name: str, summary: SmallSummary) -> dict[str, Any]:
    """:func:`validate_report` of a valid log from its summary (the same keys and values)."""
    header = summary.header
    return {
        "path": name,
        "kind": "session-log",
        "ok": True,
        "sessionId": header.session_id,
        "events": summary.events,
        "seedLength": header.seed_length,
        "tornTail": bool(summary.torn_tail),
        "active": summary.active,
    }


def _summary_row(report: dict[str, Any], summary: SmallSummary) -> tuple[str, ...]:
    """:func:`_human_validate_row` of a valid log from its summary and report."""
    torn = summary.torn_tail
    return (
        "OK",
        report["path"],
        str(report["sessionId"] or "-"),
        str(report["events"]),
        str(report["active"]),
        f"torn tail of {len(torn)} bytes (ignored)" if torn else "",
    )


def _human_validate_row(check: LogCheck) -> tuple[str, ...]:
    report = validate_report(check)
    notes = []
    if report["tornTail"]:
        assert check.contents is not None
        notes.append(f"torn tail of {len(check.contents.torn_tail)} bytes (ignored)")
    if not check.ok:
        notes.append(human_failure(check))
    return (
        "OK" if check.ok else "FAIL",
        check.path,
        str(report["sessionId"] or "-"),
        str(report["events"]),
        "-" if report["active"] is None else str(report["active"]),
        "; ".join(notes),
    )
