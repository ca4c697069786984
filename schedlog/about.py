"""What the package says about itself: its version, the tzdata release it reads zones from, and
the documentation site that help texts point to.

A leaf: it imports nothing from the package, and nothing here runs at import time, so
``schedlog --help`` pays for neither :mod:`importlib.metadata` nor :mod:`pathlib`.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["DOCS_URL", "docs_url", "package_version", "tzdata_version", "version_line"]

#: The documentation site (``mkdocs.yml``'s ``site_url``, pyproject's ``Documentation`` URL).
#: Pages are ``<page>.html`` (``use_directory_urls: false``).
DOCS_URL: Final = "https://schedlog.github.io/schedlog/"

#: The version a source tree that was never installed reports (no package metadata and no
#: ``pyproject.toml`` beside the package).
UNKNOWN_VERSION: Final = "0+unknown"


def docs_url(page: str) -> str:
    """The site URL of ``page`` (``"operations.md#web-page"``), for help texts and messages."""
    name, _, anchor = page.partition("#")
    if not name.endswith(".md"):
        raise ValueError(f"not a documentation page: {page!r}")
    return DOCS_URL + name.removesuffix(".md") + ".html" + (f"#{anchor}" if anchor else "")


@cache
def package_version() -> str:
    """The installed distribution's version; in a source tree that was never installed, the
    ``version`` of the ``pyproject.toml`` beside the package with ``+source``."""
    from importlib import metadata
    from pathlib import Path

    try:
        return metadata.version("schedlog")
    except metadata.PackageNotFoundError:
        return _source_version(Path(__file__).resolve().parent.parent / "pyproject.toml")


def _source_version(pyproject: Path) -> str:
    import tomllib

    try:
        with pyproject.open("rb") as handle:
            version = tomllib.load(handle)["project"]["version"]
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError):
        return UNKNOWN_VERSION
    return f"{version}+source" if isinstance(version, str) else UNKNOWN_VERSION


def tzdata_version() -> str:
    """The tzdata package in use and the IANA release it bundles: ``"2026.6 (IANA 2026f)"``."""
    import tzdata  # type: ignore[import-untyped]

    return f"{tzdata.__version__} (IANA {tzdata.IANA_VERSION})"


def version_line() -> str:
    """What ``schedlog --version`` prints."""
    python = ".".join(map(str, sys.version_info[:3]))
    return f"schedlog {package_version()}, tzdata {tzdata_version()}, Python {python}"
