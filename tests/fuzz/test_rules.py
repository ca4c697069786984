"""Fuzz the rules layer: the cron parser, the ``at`` parser, the zone resolver, decisions on
decoded records at arbitrary instants, record creation and update resolution."""

from __future__ import annotations

from typing import Any

from hypothesis import given

from tests.fuzz.targets import TARGETS


@given(TARGETS["cron"].strategy())
def test_cron(item: Any) -> None:
    TARGETS["cron"].run(item)


@given(TARGETS["at"].strategy())
def test_at(item: Any) -> None:
    TARGETS["at"].run(item)


@given(TARGETS["zone"].strategy())
def test_zone(item: Any) -> None:
    TARGETS["zone"].run(item)


@given(TARGETS["decide"].strategy())
def test_decide(item: Any) -> None:
    TARGETS["decide"].run(item)


@given(TARGETS["create_record"].strategy())
def test_create_record(item: Any) -> None:
    TARGETS["create_record"].run(item)


@given(TARGETS["update"].strategy())
def test_update(item: Any) -> None:
    TARGETS["update"].run(item)
