"""``schedlog.__version__``, read when first asked for (schedlog.about)."""

from __future__ import annotations

from typing import Final

from schedlog.about import package_version

__all__ = ["__version__"]

__version__: Final = package_version()
