"""The two forms of webhook deliveries in flight (schedlog/host/inflight.py): the service's
:class:`SessionChains` (a worker per session) against the readable :class:`ReferenceChains`
(a task per group), on the same schedules of groups on a virtual clock: the same start and
end instant and the same outcome for every group, so the same order within each session and
the same bound on groups at once. Then the parts a schedule does not reach: a group's
failure, cancellation, ``ids``, ``running`` and ``join``.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.host.delivery import Group
from schedlog.host.inflight import ReferenceChains, SessionChains
from schedlog.runtime.clock import VirtualClock

FORMS = (ReferenceChains, SessionChains)
T0 = 1_000_000

#: (session, start after the previous group's start (ms), duration (ms), fails)
_GROUP = st.tuples(
    st.integers(0, 3), st.integers(0, 3), st.integers(1, 6).map(lambda n: n * 10), st.booleans()
)


def _schedule(form: Any, groups: list[tuple[int, int, int, bool]], limit: int) -> list[Any]:
    """Each group's start instant, end instant and outcome, and the most at once."""

    async def main() -> list[Any]:
        clock = VirtualClock(T0)
        log: dict[str, list[Any]] = {}
        live = [0, 0]  # now, most

        async def run(group: Group) -> str:
            name = group.ids[0]
            live[0] += 1
            live[1] = max(live[1], live[0])
            log[name] = [clock.now_ms()]
            try:
                await clock.sleep_until(clock.now_ms() + durations[name])
                if name in failing:
                    raise ValueError(name)
                return name
            finally:
                live[0] -= 1
                log[name].append(clock.now_ms())

        chains = form(run, limit)
        durations = {f"g{i}": g[2] for i, g in enumerate(groups)}
        failing = {f"g{i}" for i, g in enumerate(groups) if g[3]}
        futures = []
        for i, (session, gap, _, _) in enumerate(groups):
            await clock.run_until(clock.now_ms() + gap)
            futures.append(chains.start(Group(f"s{session}", True, (f"g{i}",))))
        await clock.run_until(clock.now_ms() + 10_000)
        outcomes = []
        for future in futures:
            exc = future.exception()
            outcomes.append(repr(exc) if exc is not None else future.result())
        assert chains.running == 0 and not chains.ids
        return [log, outcomes, live[1]]

    return asyncio.run(main())


@given(st.lists(_GROUP, min_size=1, max_size=12), st.integers(1, 4))
def test_both_forms_start_and_end_every_group_alike(
    groups: list[tuple[int, int, int, bool]], limit: int
) -> None:
    reference = _schedule(ReferenceChains, groups, limit)
    assert _schedule(SessionChains, groups, limit) == reference
    log, _, most = reference
    assert most <= limit
    for session in {g[0] for g in groups}:  # one session's groups one after the other
        mine = [log[f"g{i}"] for i, g in enumerate(groups) if g[0] == session]
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(mine))


@pytest.mark.parametrize("form", FORMS)
def test_ids_running_and_join(form: Any) -> None:
    async def main() -> None:
        gates = {name: asyncio.Event() for name in ("a", "b", "c")}

        async def run(group: Group) -> str:
            await gates[group.ids[0]].wait()
            return group.ids[0]

        chains = form(run, 2)
        futures = [chains.start(Group(s, True, (n,))) for s, n in (("x", "a"), ("x", "b"))]
        futures.append(chains.start(Group("y", False, ("c",))))
        await asyncio.sleep(0)
        assert chains.ids == {"a", "b", "c"} and chains.running == 3
        gates["b"].set()  # b waits for a, its session's first
        for _ in range(5):
            await asyncio.sleep(0)
        assert not futures[1].done() and chains.ids == {"a", "b", "c"}
        gates["a"].set()
        gates["c"].set()
        await chains.join()
        assert [f.result() for f in futures] == ["a", "b", "c"]
        assert chains.ids == set() and chains.running == 0

    asyncio.run(main())


@pytest.mark.parametrize("form", FORMS)
def test_cancel_ends_running_and_waiting_groups(form: Any) -> None:
    async def main() -> None:
        never = asyncio.Event()
        started: list[str] = []

        async def run(group: Group) -> str:
            started.append(group.ids[0])
            await never.wait()
            return group.ids[0]

        chains = form(run, 1)
        futures = [chains.start(Group("s", True, (n,))) for n in ("a", "b")]
        futures.append(chains.start(Group("t", True, ("c",))))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        chains.cancel()
        await chains.join()
        assert started == ["a"]
        assert all(f.cancelled() for f in futures)
        assert chains.ids == set() and chains.running == 0

    asyncio.run(main())


def test_a_failed_group_does_not_stop_its_session() -> None:
    async def main() -> None:
        async def run(group: Group) -> str:
            if group.ids[0] == "a":
                raise asyncio.CancelledError()  # not the worker's cancellation
            return group.ids[0]

        chains: SessionChains[str] = SessionChains(run, 4)
        first = chains.start(Group("s", True, ("a",)))
        second = chains.start(Group("s", True, ("b",)))
        await chains.join()
        assert first.cancelled() and second.result() == "b"

    asyncio.run(main())


def test_a_limit_below_one_is_refused() -> None:
    async def run(group: Group) -> None:
        return None

    for form in FORMS:
        with pytest.raises(ValueError, match="at least 1"):
            form(run, 0)
