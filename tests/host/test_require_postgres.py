"""The one psycopg-missing guard (``require_postgres``) and the entry points behind it."""

from __future__ import annotations

import sys

import pytest

from schedlog.errors import StoreOpenError
from schedlog.host.stores.base import require_postgres
from schedlog.host.stores.open import open_store


@pytest.fixture
def no_psycopg(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry makes ``import psycopg`` raise ImportError, as on a machine without it.
    monkeypatch.setitem(sys.modules, "psycopg", None)


@pytest.mark.usefixtures("no_psycopg")
def test_require_postgres_names_what_to_install() -> None:
    with pytest.raises(StoreOpenError) as caught:
        require_postgres()
    assert caught.value.code == "backend-unavailable"
    assert "pip install 'schedlog[postgres]'" in caught.value.message


@pytest.mark.usefixtures("no_psycopg")
def test_open_store_refuses_a_postgres_url_without_psycopg() -> None:
    with pytest.raises(StoreOpenError) as caught:
        open_store("postgresql://127.0.0.1:1/none")
    assert caught.value.code == "backend-unavailable"
    assert "psycopg" in caught.value.message


def test_require_postgres_passes_with_the_driver() -> None:
    pytest.importorskip("psycopg_pool", reason="the postgres extra is not installed")
    require_postgres()
