"""The release artefacts: ``python -m build`` gives an sdist and a wheel that carry the LICENSE
and the PyPI description, ``twine check`` passes them, and the version the package reports is
the one its metadata holds.

The build runs offline (``--no-isolation``, with the ``dev`` extra's hatchling) in about two
seconds. Without build, twine or hatchling (``pip install -e '.[dev]'``) the build test skips,
except under ``CI=true``, where it fails.
"""

from __future__ import annotations

import email
import importlib.util
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import schedlog
from schedlog.about import DOCS_URL, docs_url, package_version, version_line
from tests.missing import missing

ROOT = Path(__file__).resolve().parent.parent


def _require_tools() -> None:
    absent = [m for m in ("build", "twine", "hatchling") if importlib.util.find_spec(m) is None]
    if absent:
        missing("build tools", f"{', '.join(absent)} not installed")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _require_tools()
    out = tmp_path_factory.mktemp("dist")
    command = [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def _wheel(dist: Path) -> Path:
    (wheel,) = dist.glob("schedlog-*.whl")
    return wheel


def _sdist(dist: Path) -> Path:
    (sdist,) = dist.glob("schedlog-*.tar.gz")
    return sdist


def test_both_artefacts_carry_the_license(dist: Path) -> None:
    license_text = (ROOT / "LICENSE").read_text("utf-8")
    assert license_text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the schedlog authors" in license_text
    with zipfile.ZipFile(_wheel(dist)) as wheel:
        names = [n for n in wheel.namelist() if n.endswith("/licenses/LICENSE")]
        assert len(names) == 1 and wheel.read(names[0]).decode("utf-8") == license_text
        assert any(n == "schedlog/py.typed" for n in wheel.namelist())
    with tarfile.open(_sdist(dist)) as sdist:
        member = sdist.extractfile(f"{_sdist(dist).name.removesuffix('.tar.gz')}/LICENSE")
        assert member is not None and member.read().decode("utf-8") == license_text


def test_twine_check_passes(dist: Path) -> None:
    files = [str(_wheel(dist)), str(_sdist(dist))]
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *files],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_wheel_metadata_is_release_ready(dist: Path) -> None:
    with zipfile.ZipFile(_wheel(dist)) as wheel:
        (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        meta = email.message_from_bytes(wheel.read(name))
    assert meta["License-Expression"] == "MIT"
    classifiers = meta.get_all("Classifier") or []
    for wanted in ("Typing :: Typed", "Programming Language :: Python :: 3.11"):
        assert wanted in classifiers
    assert any(c.startswith("Operating System ::") for c in classifiers)
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert urls["Documentation"] == DOCS_URL
    assert meta["Author"] == "the schedlog authors"
    requires = meta.get_all("Requires-Dist") or []
    assert "tzdata>=2026.6" in requires  # a lower bound, never an exact pin
    assert meta["Description-Content-Type"] == "text/markdown"
    description = meta.get_payload()
    assert isinstance(description, str)
    assert "pip install schedlog" in description
    assert "](docs/" not in description and ".venv/bin" not in description


def test_pypi_description_links_are_absolute() -> None:
    text = (ROOT / "README.pypi.md").read_text("utf-8")
    links = [part.split(")", 1)[0] for part in text.split("](")[1:]]
    assert links and all(link.startswith("https://") for link in links), links
    assert all(
        link.startswith(DOCS_URL) or link.startswith("https://github.com/") for link in links
    )


def test_version_is_the_metadata_version() -> None:
    assert schedlog.__version__ == package_version()
    assert schedlog.__version__ != "0+unknown"
    from schedlog._version import __version__

    assert schedlog.__version__ is __version__


def test_source_tree_fallback(tmp_path: Path) -> None:
    from schedlog.about import _source_version

    (tmp_path / "pyproject.toml").write_text('[project]\nversion = "9.8.7"\n', "utf-8")
    assert _source_version(tmp_path / "pyproject.toml") == "9.8.7+source"
    assert _source_version(tmp_path / "missing.toml") == "0+unknown"
    (tmp_path / "bad.toml").write_text("[project\n", "utf-8")
    assert _source_version(tmp_path / "bad.toml") == "0+unknown"


def test_version_command_names_schedlog_and_tzdata() -> None:
    import tzdata

    done = subprocess.run(
        [sys.executable, "-m", "schedlog.cli.main", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == version_line() + "\n"
    assert done.stdout.startswith(f"schedlog {package_version()}, tzdata {tzdata.__version__} ")
    assert f"IANA {tzdata.IANA_VERSION}" in done.stdout


def test_docs_url() -> None:
    assert docs_url("operations.md#web-page") == DOCS_URL + "operations.html#web-page"
    assert docs_url("cli.md") == DOCS_URL + "cli.html"
    with pytest.raises(ValueError):
        docs_url("operations#web-page")


def test_openapi_version_is_the_package_version() -> None:
    pytest.importorskip("starlette", reason="pip install -e '.[serve]'")
    from schedlog.serve.openapi import openapi

    assert openapi()["info"]["version"] == package_version()


def test_gitignore_covers_what_the_readme_commands_leave() -> None:
    left = ["store.db", "store.db-wal", "store.db-shm", "store.db.lock", "store.db.token"]
    left += ["sessions/s-1.jsonl", "sessions.token", "dist/x.whl", "site/index.html", ".venv/x"]
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", *left], cwd=ROOT, capture_output=True, text=True
    )
    assert sorted(done.stdout.split()) == sorted(left)
    kept = subprocess.run(
        ["git", "check-ignore", "--no-index", "README.md", "contrib/schedlog.service"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert kept.stdout == ""


def test_site_url_is_one_constant() -> None:
    mkdocs = (ROOT / "mkdocs.yml").read_text("utf-8")
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    assert f"\nsite_url: {DOCS_URL}\n" in mkdocs
    assert f'\nDocumentation = "{DOCS_URL}"\n' in pyproject
