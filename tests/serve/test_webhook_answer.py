"""The webhook client's answer reading, both forms side by side (schedlog/host/webhook_http.py,
issue 21): :class:`AnswerReader`, which :class:`LeanPoster`'s connections feed as bytes
arrive, against :meth:`StreamPoster._answer` reading an :class:`asyncio.StreamReader` fed the
same chunks. Hostile answers (broken status lines and headers, informational answers, heads
and bodies around the 64 KiB caps, bytes after the answer, the receiver's close anywhere)
give the same status, the same keep-alive verdict, the same error and the same bytes left
for the next answer. Then both posters on a loopback server that sends such answers in
pieces: the same bytes on the wire, the same outcomes."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.host.webhook import MAX_ANSWER_BYTES
from schedlog.host.webhook_http import (
    MAX_HEAD,
    MAX_INFORMATIONAL,
    AnswerReader,
    LeanPoster,
    ProtocolError,
    StreamPoster,
)

HEADERS = {"Content-Type": "application/json", "Schedlog-Timestamp": "1"}

_STATUS = st.sampled_from(
    [
        b"HTTP/1.1 200 OK",
        b"HTTP/1.0 200 OK",
        b"HTTP/1.1 204 No Content",
        b"HTTP/1.1 304 Not Modified",
        b"HTTP/1.1 100 Continue",
        b"HTTP/1.1 103 Early Hints",
        b"HTTP/1.1 101 Switching Protocols",
        b"HTTP/1.1 503 <b>busy</b>",
        b"HTTP/1.1 20",
        b"HTTP/2 200",
        b"SMTP ready",
        b"HTTP/1.1 200",
        b"",
    ]
)
_HEADER = st.one_of(
    st.sampled_from(
        [
            b"Content-Length: 0",
            b"Content-Length: 2",
            b"Content-Length: 5",
            b"content-length:3",
            b"Content-Length: +2",
            b"Content-Length: ten",
            b"Content-Length: 65537",
            b"Transfer-Encoding: chunked",
            b"Connection: close",
            b"Connection: Keep-Alive, CLOSE",
            b"Connection: keep-alive",
            b"no colon here",
            b"X-Markup: <script>\xed\xa0\x80</script>",
            b"X-Long: " + b"a" * (MAX_HEAD - 20),
        ]
    ),
    st.binary(max_size=12).map(lambda b: b"X-Any: " + b.replace(b"\r\n", b"")),
)
_HEAD = st.builds(
    lambda status, headers: b"\r\n".join([status, *headers]) + b"\r\n\r\n",
    _STATUS,
    st.lists(_HEADER, max_size=4),
)
_ANSWER = st.builds(
    lambda heads, body, junk: b"".join(heads) + body + junk,
    st.lists(_HEAD, min_size=0, max_size=MAX_INFORMATIONAL + 2),
    st.sampled_from([b"", b"ok", b"hello", b"x" * 70_000]),
    st.sampled_from([b"", b"\r\n", b"HTTP/1.1 200 OK\r\n\r\n", b"\xff" * 3]),
)


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def _outcome(run: Any) -> Any:
    try:
        return ("answer", *run())
    except ProtocolError as exc:
        return ("error", str(exc))


def _by_reader(chunks: list[bytes], eof: bool, max_body: int) -> Any:
    reader, buffer = AnswerReader(max_body), bytearray()

    def run() -> tuple[Any, bytes]:
        for i, chunk in enumerate(chunks):
            buffer.extend(chunk)
            found = reader.feed(buffer, False)
            if found is not None:  # the rest stays for the next answer
                return found, bytes(buffer) + b"".join(chunks[i + 1 :])
        found = reader.feed(buffer, True) if eof else None
        return found, bytes(buffer)

    return _outcome(run)


def _by_stream(chunks: list[bytes], eof: bool, max_body: int) -> Any:
    async def main() -> Any:
        reader = asyncio.StreamReader(limit=MAX_HEAD)
        poster = StreamPoster("http://127.0.0.1:9/", "ua", max_body)
        task = asyncio.ensure_future(poster._answer(reader))
        for chunk in chunks:
            reader.feed_data(chunk)
            for _ in range(3):
                await asyncio.sleep(0)
        if eof:
            reader.feed_eof()
        for _ in range(3):
            await asyncio.sleep(0)
        if not task.done():
            task.cancel()
            return ("answer", None, b"".join(chunks))
        try:
            found = task.result()
        except ProtocolError as exc:
            return ("error", str(exc))
        rest = b"".join(chunks)
        return ("answer", found, rest[len(rest) - len(reader._buffer) :])

    return asyncio.run(main())


@given(
    _ANSWER,
    st.lists(st.integers(min_value=0, max_value=200_000), max_size=6),
    st.booleans(),
    st.sampled_from([0, 3, MAX_ANSWER_BYTES]),
)
def test_the_reader_reads_as_the_stream_does(
    answer: bytes, cuts: list[int], eof: bool, max_body: int
) -> None:
    chunks = _chunks(answer, cuts)
    assert _by_reader(chunks, eof, max_body) == _by_stream(chunks, eof, max_body)


class _Spy(bytearray):
    """A buffer that records where each search for the end of a head starts."""

    starts: list[tuple[int, int]]

    def find(self, sub: Any, start: Any = 0, *rest: Any) -> int:
        self.starts.append((start, len(self)))
        return super().find(sub, start, *rest)


def test_a_trickled_answer_is_scanned_once() -> None:
    # A head of 64 KiB a byte at a time: each search starts where the last one stopped (less
    # the separator's length), not at the head's start.
    head = b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * (MAX_HEAD - 100) + b"\r\nContent-Length: 0"
    reader, buffer = AnswerReader(MAX_ANSWER_BYTES), _Spy()
    buffer.starts = []
    for byte in head:
        buffer.append(byte)
        assert reader.feed(buffer, False) is None
    buffer.extend(b"\r\n\r\n")
    found = reader.feed(buffer, False)
    assert found is not None and found.status == 200 and found.reusable and not buffer
    pairs = itertools.pairwise(buffer.starts)
    assert all(start >= before - 3 for (_, before), (start, _) in pairs)


_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


@pytest.mark.parametrize(
    "answer",
    [
        _CONTINUE * MAX_INFORMATIONAL + b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        _CONTINUE * (MAX_INFORMATIONAL + 1) + b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd",
        b"HTTP/1.1 200 OK\r\nX: " + b"a" * (MAX_HEAD - 30) + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: " + b"a" * MAX_HEAD + b"\r\n\r\n",
    ],
    ids=["8-informational", "9-informational", "body-over-cap", "head-at-cap", "head-over-cap"],
)
@pytest.mark.parametrize("pieces", [1, 7])
def test_the_caps_are_the_streams(answer: bytes, pieces: int) -> None:
    chunks = _chunks(answer, [len(answer) * i // pieces for i in range(pieces)])
    for eof in (False, True):
        assert _by_reader(chunks, eof, 3) == _by_stream(chunks, eof, 3)


class Scripted:
    """A loopback receiver: reads each request, then sends its answer in ``chunks``, a pause
    between them, and closes the connection when ``close``."""

    def __init__(self, chunks: list[bytes], close: bool) -> None:
        self.chunks, self.close = chunks, close
        self.requests: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                self.requests.append(head + await reader.readexactly(length))
                for chunk in self.chunks:
                    writer.write(chunk)
                    await writer.drain()
                    await asyncio.sleep(0.001)
                if self.close:
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()


ANSWERS = [
    [b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"],
    [b"HTTP/1.1 2", b"00 OK\r\nContent-", b"Length: 2\r\n\r", b"\nok"],
    [b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"],
    [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok"],
    [b"HTTP/1.1 503 <i>no</i>\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"],
    [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", b"2\r\nok\r\n0\r\n\r\n"],
    [b"HTTP/1.1 200 OK\r\nX: " + b"a" * (MAX_HEAD + 10), b"\r\n\r\n"],
    [b"garbage\r\n\r\n"],
    [b"HTTP/1.1 200 OK\r\n"],
    [],
]


@pytest.mark.parametrize("close", [False, True], ids=["open", "close"])
@pytest.mark.parametrize("chunks", ANSWERS, ids=[str(i) for i in range(len(ANSWERS))])
def test_both_posters_end_alike_on_the_wire(chunks: list[bytes], close: bool) -> None:
    async def post(poster: type[LeanPoster] | type[StreamPoster], url: str) -> list[Any]:
        sender = poster(url, "ua", MAX_ANSWER_BYTES)
        outcomes: list[Any] = []
        try:
            for _ in range(2):  # the second POST tells whether the connection was kept
                started = asyncio.get_running_loop().time()
                try:
                    posting = sender.post(b'{"a":"\\ud800"}', HEADERS, 0.3)
                    outcomes.append(await asyncio.wait_for(posting, 5))
                except (ProtocolError, OSError, TimeoutError) as exc:
                    outcomes.append(type(exc).__name__ + str(exc))
                # a receiver that never answers is cut off by the poster's own bound
                assert asyncio.get_running_loop().time() - started < 3
        finally:
            await sender.aclose()
        for _ in range(20):  # the server's side of each connection ends
            await asyncio.sleep(0.002)
        return outcomes

    async def main() -> None:
        server = Scripted(chunks, close)
        listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/h?q=<x>"
        try:
            lean = await post(LeanPoster, url), list(server.requests)
            server.requests.clear()
            stream = await post(StreamPoster, url), list(server.requests)
        finally:
            listener.close()
        assert lean == stream

    asyncio.run(main())


def test_unasked_bytes_pause_an_idle_connection_until_its_next_exchange() -> None:
    # After its answer the receiver floods the idle connection: reading stops past 128 KiB
    # (as a StreamReader pauses at twice its limit), and the next POST resumes it and fails
    # on the junk as the stream form does (a head too long).
    async def main() -> None:
        server = Scripted([b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", b"x" * 600_000], False)
        listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/"
        lean = LeanPoster(url, "ua", MAX_ANSWER_BYTES)
        try:
            assert await lean.post(b"{}", HEADERS, 5) == 200
            for _ in range(200):
                if lean._idle and not lean._idle[0].reading:
                    break
                await asyncio.sleep(0.005)
            wire = lean._idle[0]
            assert not wire.reading and 2 * MAX_HEAD < len(wire.buffer) < 600_000
            with pytest.raises(ProtocolError, match="too long"):
                await lean.post(b"{}", HEADERS, 5)
            assert wire.reading
        finally:
            await lean.aclose()
            listener.close()

    asyncio.run(main())
