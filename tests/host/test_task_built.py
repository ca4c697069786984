"""Tasks built from rows the bulk fast path vouched for (schedlog.host.task_built, used by
``SqliteTaskStore.get_many`` through ``sqlite_load.decode_rows``) against the readable
reference, ``decode_row`` of each row: for valid and invalid rows, hostile text included, the
builder answers only when the reference accepts every row, with equal tasks, and
``decode_rows`` gives the reference's tasks or its first error."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.host.stores.sqlite_load import decode_row, decode_rows
from schedlog.host.task import InvalidTaskError, new_task
from schedlog.host.task_built import built_tasks
from schedlog.rules.record import Record
from schedlog.rules.text import js_dumps
from tests.host.test_task_typed import row_lists


def _reference(rows: list[tuple[int, Any, Any, Any]], pausable: bool) -> Any:
    out = []
    for row in rows:
        try:
            if not all(isinstance(c, str) for c in row[1:]):
                return "refused"
            out.append(decode_row(*row, pausable=pausable))
        except InvalidTaskError as exc:
            return ("error", exc.message)
    return out


@given(st.one_of(row_lists(1), row_lists()), st.booleans())
def test_built_tasks_are_the_references(rows: Any, pausable: bool) -> None:
    fast = built_tasks(rows, pausable=pausable)
    reference = _reference(rows, pausable)
    if fast is not None:
        assert isinstance(reference, list)
        assert fast == reference
        # field by field, types included (an int is not a bool, a tuple not a list)
        for a, b in zip(fast, reference, strict=True):
            assert repr(a) == repr(b)


@given(st.one_of(row_lists(1), row_lists()), st.booleans())
def test_decode_rows_is_decode_row_of_each(rows: Any, pausable: bool) -> None:
    if not all(isinstance(c, str) for row in rows for c in row[1:]):
        return  # the store's columns are text (get_many reads only stored rows)
    reference = _reference(rows, pausable)
    if isinstance(reference, list):
        assert decode_rows(rows, pausable=pausable) == reference
    else:
        with pytest.raises(InvalidTaskError) as info:
            decode_rows(rows, pausable=pausable)
        assert ("error", info.value.message) == reference


def test_rows_as_our_writers_write_them_are_built() -> None:
    from schedlog.host.task import encode_task

    record = Record(id="schedule-1", kind="at", prompt="<b>p</b>", scheduled_at=0, title="T")
    task = new_task("s\u2028", record)
    row = (7, "schedule-1", "s\u2028", js_dumps(encode_task(task)))
    built = built_tasks([row], pausable=True)
    assert built is not None and built[0].task == task and built[0].seq == 7
