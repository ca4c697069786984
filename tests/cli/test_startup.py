"""Command registration stays cheap: ``replay`` and ``validate`` import only what they use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from schedlog.cli import host_cmd, logs_cmd, rules_cmd, session_cmd

REPO = Path(__file__).resolve().parents[2]
FORK = REPO / "fixtures" / "logs" / "fork-child.jsonl"

# Run a command in a fresh interpreter, then list the modules it had imported.
PROBE = """
import contextlib, io, sys
from schedlog.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
modules = sorted(sys.modules)
import json
print(json.dumps({"code": code, "modules": modules}))
"""

#: What an offline log command has no use for.
HEAVY = ("asyncio", "structlog", "sqlite3", "schedlog.host", "schedlog.runtime", "pathlib")


def imported_by(*argv: str) -> tuple[int, list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], cwd=REPO, capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout)
    return result["code"], result["modules"]


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY)]


@pytest.mark.parametrize(
    "argv",
    [
        ["replay", "--json", "--log", str(FORK)],
        ["validate", "--json", str(FORK)],
        ["repair", "--dry-run", "--json", "--log", str(FORK)],
    ],
    ids=["replay", "validate", "repair"],
)
def test_offline_log_commands_import_no_asyncio_host_or_runtime(argv: list[str]) -> None:
    code, modules = imported_by(*argv)
    assert code == 0
    assert heavy(modules) == []
    assert "schedlog.invariant.appender" not in modules  # reading needs no appender
    assert "json" not in modules  # a compact log needs only msgspec's decoder
    # A log command registers only the log commands: no other command's wiring is imported.
    assert [m for m in modules if m.startswith("schedlog.cli.") and m.endswith("_cmd")] == [
        "schedlog.cli.logs_cmd"
    ]


def test_registering_every_command_imports_no_implementation() -> None:
    probe = (
        "import sys, json\n"
        "from schedlog.cli.main import build_parser\n"
        "build_parser()\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    modules = json.loads(out.stdout)
    schedlog_modules = {m for m in modules if m.startswith("schedlog")}
    assert schedlog_modules == {
        "schedlog",
        "schedlog.errors",
        "schedlog.cli",
        "schedlog.cli.main",
        "schedlog._lazy",
        "schedlog.cli.host_cmd",
        "schedlog.cli.logs_cmd",
        "schedlog.cli.mcp_cmd",
        "schedlog.cli.rules_cmd",
        "schedlog.cli.session_cmd",
        "schedlog.cli.store_cmd",
        "schedlog.cli.run_log",  # --log-format/--log-level; stdlib-only until configured
        "schedlog.about",  # the docs site's URL for help texts; stdlib-only, no metadata read
    }
    assert heavy(modules) == []


def test_rules_batch_help_lists_exactly_the_batch_ops() -> None:
    assert tuple(rules_cmd.RULES_OPS) == rules_cmd.OP_NAMES


@pytest.mark.parametrize(
    ("module", "names"),
    [
        (host_cmd, ["BatchClock", "HostBatch"]),
        (
            logs_cmd,
            [
                "PROGRESS_THRESHOLD",
                "LogCheck",
                "check_session_log",
                "parse_at",
                "replay_report",
                "validate_report",
            ],
        ),
        (rules_cmd, ["RULES_OPS", "decode_any_record", "upcoming_targets"]),
        (session_cmd, ["configure_diagnostics", "run_live_session", "session_batch_handlers"]),
    ],
    ids=["host", "logs", "rules", "session"],
)
def test_implementation_names_are_still_importable_from_the_command_modules(
    module: object, names: list[str]
) -> None:
    for name in names:
        assert getattr(module, name) is not None
    with pytest.raises(AttributeError):
        getattr(module, "no_such_name")  # noqa: B009


#: ``session batch`` in a fresh interpreter, stdin given; then the modules it imported, and the
#: schedlog modules that hold a structlog logger of their own (which would log unconfigured:
#: ``session batch`` configures structlog only when a ``LazyLogger`` first logs).
BATCH_PROBE = """
import contextlib, io, json, sys
from schedlog.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
modules = sorted(sys.modules)
import structlog
own = sorted(
    f"{name}.{attr}"
    for name, module in list(sys.modules.items())
    if name.startswith("schedlog")
    for attr, value in vars(module).items()
    if type(value).__name__ == "BoundLoggerLazyProxy"
)
print(json.dumps({"code": code, "modules": modules, "out": out.getvalue(), "own": own}))
"""

REQUESTS = [
    '{"op":"schedule_create","now":"2026-05-01T09:00:00Z",'
    '"args":{"prompt":"<b>p</b> \\ud800","after_seconds":60}}',
    '{"op":"schedule_list","now":"2026-05-01T09:00:00Z","args":{}}',
    '{"op":"tick","now":"2026-05-01T09:05:00Z"}',
    '{"op":"schedule_create","now":"2026-05-01T09:05:00Z",'
    '"args":{"prompt":"q","every_seconds":3600}}',
    '{"op":"schedule_delete","now":"2026-05-01T09:05:00Z","args":{"id":"schedule-2"}}',
    '{"op":"archive_activity","now":"2026-05-01T09:06:00Z"}',
    '{"op":"archive_stop","now":"2026-05-01T09:06:00Z"}',
]


def batch_run(log: Path, requests: list[str]) -> tuple[dict[str, object], str]:
    done = subprocess.run(
        [sys.executable, "-c", BATCH_PROBE, "session", "batch", "--log", str(log)],
        cwd=REPO,
        input="".join(r + "\n" for r in requests),
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result, done.stderr


def test_session_batch_imports_no_structlog_asyncio_or_live_engine(tmp_path: Path) -> None:
    log = tmp_path / "s-1.jsonl"
    result, stderr = batch_run(log, REQUESTS)
    answers = [json.loads(line) for line in str(result["out"]).splitlines()]
    assert result["code"] == 0 and len(answers) == len(REQUESTS) and stderr == ""
    assert len(answers[2]["ok"]["delivered"]) == 1  # a tick delivered
    assert answers[4] == {"ok": {"id": "schedule-2", "deleted": True}}
    modules = result["modules"]
    assert isinstance(modules, list)
    heavy_ones = [m for m in modules if m.split(".")[0] in ("asyncio", "structlog", "rich")]
    assert heavy_ones == []
    assert "schedlog.runtime.engine" not in modules and "schedlog.runtime.owner" not in modules
    assert [m for m in modules if m.startswith(("schedlog.host", "schedlog.serve"))] == []
    assert result["own"] == []
    # ``session`` registers only the session commands (and the log commands' wiring, which
    # the command module imports first).
    assert [m for m in modules if m.startswith("schedlog.cli.") and m.endswith("_cmd")] == [
        "schedlog.cli.logs_cmd",
        "schedlog.cli.session_cmd",
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["session", "--help"],
        ["session", "batch", "--help"],
        ["session", "run", "--help"],
        ["session"],
        ["session", "bogus"],
        ["session", "batch"],
        ["session", "run", "--log", "x", "--log-level", "loud"],
    ],
)
def test_the_session_parser_alone_answers_as_the_whole_parser(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from schedlog.cli.main import build_parser

    answers = []
    for parser in (build_parser(), build_parser(session_only=True)):
        with pytest.raises(SystemExit) as exited:
            parser.parse_args(argv)
        out, err = capsys.readouterr()
        answers.append((exited.value.code, out, err))
    assert answers[0] == answers[1] and (answers[0][1] or answers[0][2])


def test_session_batch_logs_its_first_line_configured(tmp_path: Path) -> None:
    log = tmp_path / "s-1.jsonl"
    log.write_bytes(
        b'{"type":"session/header","version":1,"sessionId":"s-1","seedLength":0,'
        b'"parentSessionId":null}\n{"type":"m","da'
    )
    result, stderr = batch_run(log, REQUESTS[1:2])
    assert result["code"] == 0 and json.loads(str(result["out"])) == {"ok": []}
    lines = [json.loads(line) for line in stderr.splitlines()]
    assert [(d["event"], d["level"], d["bytes"]) for d in lines] == [
        ("session_log.torn_tail_truncated", "warning", 15)
    ]
    assert "timestamp" in lines[0] and "structlog" in result["modules"]  # type: ignore[operator]
    assert result["own"] == []
