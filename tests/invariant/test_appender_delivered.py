"""``LogAppender.delivered`` is found in the events read at open when first asked for (the
session open never asks): asked for at any point, after any appends, ``append_many`` and
catch-ups of another writer's follow-ups, it is what it is when asked for at once, and what the
reference finds in the whole log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlog.eventlog import build_followup, read_log
from schedlog.eventlog.followups import delivered_members
from schedlog.invariant.appender import LogAppender
from tests.eventlog.helpers import chatter, header, log_bytes

T = "2026-05-01T09:00:00.000Z"
U = "2026-05-01T10:00:00.000Z"


def _followup(session: str, ids: list[str], at: str = T) -> dict[str, Any]:
    return build_followup(session, [(i, at) for i in ids], "text", 0)


MEMBERS = st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=2, unique=True)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), MEMBERS, st.sampled_from([T, U])),
        st.tuples(st.just("many"), MEMBERS, st.sampled_from([T, U])),
        st.tuples(st.just("other"), MEMBERS, st.sampled_from([T, U])),
        st.tuples(st.just("chatter"), st.just([]), st.just(T)),
        st.tuples(st.just("malformed"), st.just([]), st.just(T)),
    ),
    max_size=8,
)


def _run(path: Path, steps: list[Any], ask_at: int) -> list[Any]:
    """The delivered members seen after each step from ``ask_at`` on (none before)."""
    seen = []
    with LogAppender.open(path) as log:
        for number, (kind, ids, at) in enumerate(steps):
            if number >= ask_at:
                seen.append(dict(log.delivered))
            if kind == "append":
                log.append(_followup("s-1", ids, at))
            elif kind == "many":
                log.append_many([chatter(), _followup("s-1", ids, at)])
            elif kind == "other":  # another writer, seen by the next catch-up
                with path.open("ab") as other:
                    other.write(log_bytes(_followup("s-1", ids, at)))
                log.catch_up()
            elif kind == "chatter":
                log.append(chatter())
            else:
                log.append({"type": "message/followup", "data": {"messageId": "x"}})
        seen.append(dict(log.delivered))
    return seen


SETTINGS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(st.booleans(), MEMBERS, STEPS, st.integers(0, 9))
def test_delivered_asked_late_is_delivered_asked_at_once(
    tmp_path: Path, seeded: bool, first: list[str], steps: list[Any], ask_at: int
) -> None:
    # an inherited follow-up (before seedLength when seeded) and an owned one at open
    start = log_bytes(
        header("s-1", 1 if seeded else 0, "p" if seeded else None),
        _followup("p", first),
        _followup("s-1", ["c"], U),
    )
    early, late = tmp_path / "early.jsonl", tmp_path / "late.jsonl"
    early.write_bytes(start)
    late.write_bytes(start)
    at_once = _run(early, steps, 0)
    asked_late = _run(late, steps, ask_at)
    assert asked_late == at_once[len(at_once) - len(asked_late) :]
    assert late.read_bytes() == early.read_bytes()
    contents = read_log(late)
    seed = contents.header.seed_length if contents.header is not None else 0
    assert asked_late[-1] == delivered_members(contents.events, seed_length=seed)
