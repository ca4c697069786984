"""``CanonicalInstantParser.parse`` keeps the instants of the texts it parsed last: an answer
from the memo is the computed one (``parse_uncached``, with a parser of its own), the memo stays
bounded, and only ``str`` texts that parsed are kept."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from schedlog.rules import instants
from schedlog.rules.instants import MAX_MS, MIN_MS, CanonicalInstantParser, format_instant

TEXTS = st.one_of(
    st.integers(MIN_MS, MAX_MS).map(format_instant),
    st.text(alphabet="0123456789-:.TZ", min_size=24, max_size=24),
    st.text(max_size=30),
    st.sampled_from(["2026-02-30T00:00:00.000Z", "2026-01-01T24:00:00.000Z", "\ud800" * 24]),
)


@given(st.lists(TEXTS, max_size=20))
def test_an_answer_from_the_memo_is_the_computed_one(texts: list[str]) -> None:
    parser, reference = CanonicalInstantParser(), CanonicalInstantParser()
    for text in texts + texts:  # the second time from the memo, where it parsed
        assert parser.parse(text) == reference.parse_uncached(text)


@given(st.integers(MIN_MS, MAX_MS))
def test_a_formatted_instant_parses_back(ms: int) -> None:
    parser = CanonicalInstantParser()
    assert parser.parse(format_instant(ms)) == ms
    assert parser.parse(format_instant(ms)) == ms


def test_only_str_texts_that_parse_are_kept() -> None:
    class Text(str):
        pass

    parser = CanonicalInstantParser()
    good = "2026-03-01T09:00:00.000Z"
    assert parser.parse(Text(good)) is None  # a str subclass is not a stored instant
    assert parser.parse(good.encode()) is None
    assert parser.parse("2026-03-01T09:00:00.000z") is None
    assert parser._parsed == {}
    assert parser.parse(good) == 1_772_355_600_000
    assert parser._parsed == {good: 1_772_355_600_000}


def test_the_memo_is_bounded() -> None:
    parser = CanonicalInstantParser()
    for ms in range(instants._PARSED_KEPT + 10):
        assert parser.parse(format_instant(ms)) == ms
    assert len(parser._parsed) <= instants._PARSED_KEPT
    assert parser.parse("1970-01-01T00:00:00.005Z") == 5
