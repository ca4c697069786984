"""``schedlog validate`` / ``replay`` / ``repair`` (docs/cli.md#validate, docs/cli.md#replay,
docs/cli.md#repair) and the golden session-log fixtures in ``fixtures/logs/``."""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import io
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from schedlog.cli import logs_cmd
from tests.eventlog.helpers import change, chatter, create_data, delete_data, header, log_bytes

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "logs"
NAMES = [p.name[: -len(".jsonl")] for p in sorted(FIXTURES.glob("*.jsonl"))]


def run(argv: list[str], validate_store: Any = None) -> int:
    parser = argparse.ArgumentParser(prog="schedlog")
    sub = parser.add_subparsers(dest="command", required=True)
    logs_cmd.register(sub, validate_store=validate_store)
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def json_lines(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines()]


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- golden fixtures --------------------------------------------------------------------------


def test_there_are_enough_fixtures() -> None:
    assert len(NAMES) >= 12
    for name in NAMES:
        assert (FIXTURES / f"{name}.expected.json").is_file(), name


@pytest.mark.parametrize("name", NAMES)
def test_fixture_matches_expected(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text(encoding="utf-8"))
    rel = f"fixtures/logs/{name}.jsonl"
    before = digest(REPO / rel)

    assert run(["validate", rel]) == expected["validateExit"]
    assert json_lines(capsys.readouterr().out) == [expected["validate"]]

    assert run(["replay", "--log", rel]) == expected["replayExit"]
    assert json_lines(capsys.readouterr().out) == [expected["replay"]]

    if "replayAt" in expected:
        assert run(["replay", "--log", rel, "--at", expected["replayAt"]["at"]]) == 0
        assert json_lines(capsys.readouterr().out) == [expected["replayAt"]["output"]]

    assert digest(REPO / rel) == before  # validate and replay only read


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_fixtures", REPO / "fixtures" / "make_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_fixtures"] = module
    spec.loader.exec_module(module)
    return module


def test_fixtures_are_exactly_what_the_generator_makes(tmp_path: Path) -> None:
    generator = _load_generator()
    names = generator.generate(tmp_path)
    assert sorted(names) == sorted(NAMES)
    for path in sorted(tmp_path.iterdir()):
        assert path.read_bytes() == (FIXTURES / path.name).read_bytes(), path.name
    assert len(list(tmp_path.iterdir())) == len(list(FIXTURES.glob("*.json*")))


def test_validate_walks_the_fixture_folder(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    assert run(["validate", "fixtures/"]) == 1  # some fixtures are invalid by design
    reports = json_lines(capsys.readouterr().out)
    assert [r["path"] for r in reports] == [f"fixtures/logs/{n}.jsonl" for n in NAMES]
    for report in reports:
        name = Path(report["path"]).name[: -len(".jsonl")]
        expected = json.loads((FIXTURES / f"{name}.expected.json").read_text(encoding="utf-8"))
        assert report == expected["validate"]
        if not report["ok"]:
            assert report["error"]["line"] >= 1 and report["error"]["message"]


def test_replay_of_a_fork_shows_only_the_childs_reminders(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    assert run(["replay", "--log", "fixtures/logs/fork-child.jsonl"]) == 0
    (out,) = json_lines(capsys.readouterr().out)
    assert out["seedLength"] == 4 and out["seenIds"] == ["schedule-1"]
    assert [r["prompt"] for r in out["active"]] == ["Call home"]


# --- validate ---------------------------------------------------------------------------------


def test_validate_report_shapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.jsonl"
    good.write_bytes(log_bytes(header(), change(create_data("a")), chatter()) + b"{tor")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(log_bytes(header(), change(delete_data("a"))))
    assert run(["validate", str(good), str(bad)]) == 1
    first, second = json_lines(capsys.readouterr().out)
    assert first == {
        "path": str(good),
        "kind": "session-log",
        "ok": True,
        "sessionId": "s-1",
        "events": 2,
        "seedLength": 0,
        "tornTail": True,
        "active": 1,
    }
    assert second == {
        "path": str(bad),
        "kind": "session-log",
        "ok": False,
        "sessionId": "s-1",
        "events": 1,
        "seedLength": 0,
        "tornTail": False,
        "active": None,
        "error": {
            "code": "corrupt_schedule_log",
            "message": 'schedule delete targets inactive id "a" - at `$.data.id`',
            "line": 2,
        },
    }


def test_validate_exit_0_when_everything_is_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.jsonl").write_bytes(log_bytes(header()))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.jsonl").write_bytes(b"")
    (tmp_path / "ignored.txt").write_text("not a log")
    assert run(["validate", str(tmp_path)]) == 0
    paths = [r["path"] for r in json_lines(capsys.readouterr().out)]
    assert paths == [str(tmp_path / "a.jsonl"), str(tmp_path / "sub" / "b.jsonl")]


def test_a_folder_named_like_a_log_is_walked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "dir.jsonl"
    directory.mkdir()
    (directory / "inner.jsonl").write_bytes(b"")
    assert run(["validate", str(directory)]) == 0
    assert [r["path"] for r in json_lines(capsys.readouterr().out)] == [
        str(directory / "inner.jsonl")
    ]


def test_unreadable_file_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(log_bytes(header()))

    def refuse(name: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(logs_cmd, "read_log", refuse)
    assert run(["validate", str(path)]) == 1
    (report,) = json_lines(capsys.readouterr().out)
    assert report["ok"] is False and report["sessionId"] is None
    assert report["error"] == {
        "code": "session_log_unreadable",
        "message": f"cannot read {json.dumps(str(path))}: Permission denied",
    }
    assert run(["replay", "--log", str(path)]) == 1
    assert json_lines(capsys.readouterr().out)[0]["error"]["code"] == "session_log_unreadable"


def test_human_validate_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.jsonl"
    good.write_bytes(log_bytes(header(), chatter()) + b"x")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(log_bytes(header(), b"oops"))
    out = Tty()
    monkeypatch.setattr(sys, "stdout", out)
    assert run(["validate", str(good), str(bad)]) == 1
    text = out.getvalue()
    assert text.splitlines()[0].split() == ["RESULT", "PATH", "SESSION", "EVENTS", "ACTIVE", "NOTE"]
    assert "torn tail of 1 bytes (ignored)" in text
    assert "FAIL" in text and "line 2 (byte" in text and "invalid JSON" in text
    assert text.endswith("2 session log(s) checked, 1 failed\n")
    out = Tty()
    monkeypatch.setattr(sys, "stdout", out)
    assert run(["validate", "--json", str(good)]) == 0
    assert json_lines(out.getvalue())[0]["ok"] is True


@pytest.mark.parametrize(("count", "lines"), [(20, 0), (21, 11)], ids=["quiet", "progress"])
def test_progress_on_stderr_for_many_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], count: int, lines: int
) -> None:
    for n in range(count):
        (tmp_path / f"{n:02d}.jsonl").write_bytes(log_bytes(header(f"s-{n}")))
    assert run(["validate", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == count
    progress = json_lines(captured.err)
    assert len(progress) == lines
    if lines:
        assert progress[-1] == {"event": "validate.progress", "checked": 21, "total": 21}


@pytest.mark.parametrize("count", [5, 21, 150, 301])
def test_reports_come_before_the_progress_line_that_counts_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    # The reports are written a few at a time, but each before the progress line that counts
    # it, and all of them by the end: on one stream, as one line each came out before.
    for n in range(count):
        (tmp_path / f"{n:03d}.jsonl").write_bytes(log_bytes(header(f"s-{n}")))
    both = io.StringIO()
    monkeypatch.setattr(sys, "stdout", both)
    monkeypatch.setattr(sys, "stderr", both)
    assert run(["validate", str(tmp_path)]) == 0
    reports = 0
    for line in json_lines(both.getvalue()):
        if line.get("event") == "validate.progress":
            assert line["checked"] == reports
        else:
            assert line["sessionId"] == f"s-{reports}"
            reports += 1
    assert reports == count


def test_progress_rewrites_one_line_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(25):
        (tmp_path / f"{n:02d}.jsonl").write_bytes(b"")
    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    assert run(["validate", str(tmp_path)]) == 0
    assert err.getvalue().count("\r") == 25
    assert err.getvalue().endswith("checked 25/25 files\n")


USAGE = [
    ("no-logs", ["validate"], "give at least one LOG"),
    ("missing-file", ["validate", "/nonexistent/x.jsonl"], "no such file"),
    ("store-unsupported", ["validate", "--store", "s.db"], "--store is not supported"),
    ("backend-without-store", ["validate", "--backend", "json", "x"], "--backend needs --store"),
    ("replay-missing", ["replay", "--log", "/nonexistent.jsonl"], "no such file"),
    ("replay-bad-at", ["replay", "--log", "x", "--at", "tomorrow"], "--at"),
    ("repair-missing", ["repair", "--log", "/nonexistent.jsonl"], "no such file"),
]


@pytest.mark.parametrize(("argv", "fragment"), [u[1:] for u in USAGE], ids=[u[0] for u in USAGE])
def test_usage_errors_exit_2(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and fragment in captured.err and "usage:" in captured.err


def test_argparse_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        run(["replay"])
    assert info.value.code == 2


def test_store_hook(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[tuple[str, str | None]] = []

    def validate_store(path: str, backend: str | None) -> dict[str, Any]:
        calls.append((path, backend))
        return {"path": path, "kind": "store", "ok": False, "tasks": 0, "error": {"code": "x"}}

    log = tmp_path / "a.jsonl"
    log.write_bytes(log_bytes(header()))
    assert run(["validate", "--store", "s.db", "--backend", "json", str(log)], validate_store) == 1
    reports = json_lines(capsys.readouterr().out)
    assert calls == [("s.db", "json")]
    assert [r["kind"] for r in reports] == ["store", "session-log"]


# --- replay -----------------------------------------------------------------------------------


def _every_log(tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        log_bytes(
            header(),
            change(create_data("a", "every", at="2026-05-01T09:00:00.000Z", everySeconds=600)),
            change(create_data("b", "at", at="2026-05-02T09:00:00.000Z")),
        )
    )
    return path


def test_replay_with_and_without_at(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _every_log(tmp_path)
    assert run(["replay", "--log", str(path)]) == 0
    (plain,) = json_lines(capsys.readouterr().out)
    assert plain["sessionId"] == "s-1" and plain["seenIds"] == ["a", "b"]
    assert "state" not in plain["active"][0]
    assert run(["replay", "--log", str(path), "--at", "2026-05-01T10:00:00+01:00"]) == 0
    (views,) = json_lines(capsys.readouterr().out)
    assert [(v["state"], v["deliveryMode"]) for v in views["active"]] == [
        ("overdue", "session-local"),
        ("scheduled", "session-local"),
    ]


def test_replay_of_a_corrupt_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(log_bytes(header(), chatter(), b"", chatter()))
    assert run(["replay", "--log", str(path)]) == 1
    assert json_lines(capsys.readouterr().out) == [
        {"error": {"code": "corrupt_schedule_log", "message": "empty line", "line": 3}}
    ]


def test_human_replay_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _every_log(tmp_path)
    out = Tty()
    monkeypatch.setattr(sys, "stdout", out)
    assert run(["replay", "--log", str(path), "--at", "2026-05-01T10:00:00Z"]) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("session s-1 (seedLength 0): 2 active")
    assert lines[1].split() == ["ID", "KIND", "TARGET", "(UTC)", "STATE"]
    assert lines[2].split() == ["a", "every", "600s", "2026-05-01T09:00:00.000Z", "overdue"]
    assert lines[3].split() == ["b", "at", "2026-05-02T09:00:00.000Z", "scheduled"]


# --- repair -----------------------------------------------------------------------------------


def test_repair_truncates_only_the_torn_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.jsonl"
    good = log_bytes(header(), chatter())
    path.write_bytes(good + b'{"type":"x"')
    assert run(["repair", "--log", str(path), "--dry-run"]) == 0
    assert json_lines(capsys.readouterr().out) == [
        {
            "path": str(path),
            "tornTail": True,
            "truncatedBytes": 0,
            "dryRun": True,
            "wouldTruncateBytes": 11,
        }
    ]
    assert path.read_bytes() == good + b'{"type":"x"'
    assert run(["repair", "--log", str(path)]) == 0
    assert json_lines(capsys.readouterr().out) == [
        {"path": str(path), "tornTail": True, "truncatedBytes": 11}
    ]
    assert path.read_bytes() == good
    assert run(["repair", "--log", str(path)]) == 0
    assert json_lines(capsys.readouterr().out) == [
        {"path": str(path), "tornTail": False, "truncatedBytes": 0}
    ]


@pytest.mark.parametrize(
    "content",
    [
        log_bytes(header(), b"garbage") + b"torn",
        log_bytes(header(), change(delete_data("x"))) + b"torn",
    ],
    ids=["bad-line", "fold-fails"],
)
def test_repair_never_touches_a_corrupt_log(
    tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(content)
    assert run(["repair", "--log", str(path)]) == 1
    (report,) = json_lines(capsys.readouterr().out)
    assert report["tornTail"] is True and report["truncatedBytes"] == 0
    assert report["error"]["code"] == "corrupt_schedule_log" and report["error"]["line"] == 2
    assert path.read_bytes() == content


def test_repair_of_a_torn_only_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"session/hea')
    assert run(["repair", "--log", str(path)]) == 0
    assert path.read_bytes() == b""


def test_human_repair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(log_bytes(header()) + b"xyz")
    out = Tty()
    monkeypatch.setattr(sys, "stdout", out)
    assert run(["repair", "--log", str(path), "--dry-run"]) == 0
    assert run(["repair", "--log", str(path)]) == 0
    assert run(["repair", "--log", str(path)]) == 0
    assert out.getvalue().splitlines() == [
        f"{path}: dry run: would truncate 3 bytes of torn tail; not written",
        f"{path}: truncated 3 bytes of torn tail",
        f"{path}: no torn tail; nothing to do",
    ]


def test_replay_report_formats_every_target_as_to_json_does(tmp_path: Path) -> None:
    # replay_report formats the targets of the whole active set at once (format_instants):
    # the same text as each record's to_json, over many days, times and kinds.
    from schedlog.cli._logs import check_session_log
    from schedlog.cli._replay import replay_report
    from schedlog.rules.instants import format_instant, parse_canonical_instant

    start = parse_canonical_instant("0001-01-01T00:00:00.000Z")
    assert start is not None
    events = [header()]
    for i in range(300):
        at = format_instant(start + i * 7_777_777_777_777 % 315_537_897_599_999)
        kind = ("after", "at", "every")[i % 3]
        extra: dict[str, Any] = {"title": f't<&"{i}'} if i % 5 == 0 else {}
        events.append(change(create_data(f"r{i}", kind, at, **extra)))
    path = tmp_path / "log.jsonl"
    path.write_bytes(log_bytes(*events))
    check = check_session_log(str(path))
    assert check.state is not None and len(check.state.active) == 300
    assert replay_report(check, None)["active"] == [r.to_json() for r in check.state.active]


def test_replay_bytes_are_the_reports_json(tmp_path: Path) -> None:
    # replay --json of a fast check prints the JSON text the check kept (replay_bytes): the
    # bytes of the report built from the records, split or not, with hostile text (a lone
    # surrogate in the header, which the reference decoder reads).
    from schedlog.cli._logs import check_session_log
    from schedlog.cli._replay import replay_bytes, replay_report
    from schedlog.rules.text import json_bytes

    events = [header(sid="s-<&>\ud800")]
    for i in range(40):
        kind = ("after", "at", "every")[i % 3]
        extra: dict[str, Any] = {"title": f't<&"\u2028{i}'} if i % 5 == 0 else {}
        events.append(change(create_data(f"r{i}", kind, **extra)))
    events.append(change(create_data("r-40", "at")))
    events.append(change(delete_data("r3")))
    path = tmp_path / "log.jsonl"
    path.write_bytes(log_bytes(*events))
    for split in (False, True):
        check = check_session_log(str(path), split=split, rendered=True)
        assert check.rendered is not None and check.state is not None
        expected = json_bytes(replay_report(check, None))
        assert replay_bytes(check) == expected
        assert check.state.active_count == len(check.state.active) == 40


@pytest.mark.parametrize("encoding", ["utf-8", "UTF8", "ascii", "latin-1"])
def test_replay_json_bytes_are_the_text_layers_bytes(encoding: str) -> None:
    # write_json_bytes writes to stdout's buffer only when the text layer would write UTF-8;
    # otherwise (here: non-ASCII escaped or refused) it goes through the text layer.
    from schedlog.cli._replay import write_json_bytes
    from schedlog.cli.common import write_json_line

    value = {"active": [{"id": "é-1", "prompt": "会议 \ud800 x"}], "n": 1}
    results = []
    for write in (write_json_bytes, write_json_line):
        raw = io.BytesIO()
        out = io.TextIOWrapper(raw, encoding=encoding, errors="backslashreplace")
        out.write("before\n")
        write(value, out)
        out.flush()
        results.append(raw.getvalue())
    assert results[0] == results[1]
