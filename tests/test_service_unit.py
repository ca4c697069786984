"""The systemd unit of ``host serve`` (``contrib/schedlog.service``): ``systemd-analyze verify``
accepts it without a warning, it has the hardening docs/operations.md#service-unit promises, its
``ExecStart`` parses with schedlog's own parser, and the page shows the file as it is.

``systemd-analyze`` is not on every machine: without it the verify test skips with a message
(``apt-get install systemd`` provides it). It needs no running systemd.
"""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.missing import missing

ROOT = Path(__file__).resolve().parent.parent
UNIT = ROOT / "contrib" / "schedlog.service"
INSTALLED = "/opt/schedlog/.venv/bin/schedlog"


def _service() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(UNIT.read_text("utf-8"))
    return parser["Service"]


def verify(unit_text: str, tmp_path: Path) -> str:
    """``systemd-analyze verify``'s complaints about ``unit_text`` (empty: none). The install
    path of ``ExecStart`` is replaced by this environment's ``schedlog``, which verify requires
    to exist."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        missing("systemd-analyze", "systemd-analyze not found: the unit is not verified")
    here = Path(sys.executable).parent / "schedlog"
    path = tmp_path / "schedlog.service"
    path.write_text(unit_text.replace(INSTALLED, str(here)), "utf-8")
    done = subprocess.run(
        [analyze, "verify", str(path)], capture_output=True, text=True, timeout=60
    )
    complaints = [line for line in done.stderr.splitlines() if "schedlog" in line]
    if done.returncode != 0:
        complaints.append(f"exit status {done.returncode}: {done.stderr.strip()}")
    return "\n".join(complaints)


def test_systemd_analyze_verify_accepts_the_unit(tmp_path: Path) -> None:
    assert verify(UNIT.read_text("utf-8"), tmp_path) == ""


def test_verify_catches_a_broken_unit(tmp_path: Path) -> None:
    text = UNIT.read_text("utf-8")
    assert verify(text.replace("Restart=on-failure", "Restart=sometimes"), tmp_path) != ""
    assert verify(text.replace("Type=exec", "Typo=exec"), tmp_path) != ""


def test_unit_has_the_promised_settings() -> None:
    service = _service()
    expected = {
        "Type": "exec",
        "Restart": "on-failure",
        "User": "schedlog",
        "StateDirectory": "schedlog",
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ReadWritePaths": "/var/lib/schedlog",
    }
    assert {key: service.get(key) for key in expected} == expected


def test_exec_start_parses_with_schedlogs_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    from schedlog.cli.main import build_parser

    name, _, value = _service()["Environment"].partition("=")
    assert (name, value) == ("SCHEDLOG_STORE", "/var/lib/schedlog/store.db")
    monkeypatch.setenv(name, value)  # as systemd sets it
    words = shlex.split(_service()["ExecStart"])
    assert words[0] == INSTALLED
    args = build_parser().parse_args(words[1:])
    assert (args.command, args.host_command) == ("host", "serve")
    assert (args.store, args.sessions) == (value, "/var/lib/schedlog/sessions")


def test_operations_page_shows_the_file_verbatim() -> None:
    page = (ROOT / "docs" / "operations.md").read_text("utf-8")
    assert f"```ini\n{UNIT.read_text('utf-8')}```" in page
