"""The webhook sink's lean HTTP/1.1 client (schedlog/host/webhook_http.py, issue 21) against
a loopback server that answers as each test scripts it: the bytes sent are httpx's, a
connection is kept alive only after an answer read to its end, at most 64 KiB of an answer
are read and never decompressed, and every broken answer is a WebhookError. Each holds for
both forms: the protocol-based LeanPoster and the readable StreamPoster on asyncio streams,
which are also run side by side on hostile answers (tests/serve/test_webhook_answer.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from schedlog.host.webhook import MAX_ANSWER_BYTES, WebhookError, WebhookSink
from schedlog.host.webhook_http import LeanPoster, StreamPoster
from schedlog.runtime.clock import SystemClock

HEADERS = {
    "Content-Type": "application/json",
    "Schedlog-Timestamp": "1",
    "Schedlog-Signature": "v1=ab",
}
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
POSTERS = pytest.mark.parametrize("poster", [LeanPoster, StreamPoster], ids=["lean", "stream"])
Poster = type[LeanPoster] | type[StreamPoster]


class Server:
    """Reads each request head and body, records them per connection, writes ``answer``."""

    def __init__(self, answer: Callable[[int], bytes]) -> None:
        self.answer = answer
        self.requests: list[tuple[int, bytes]] = []  # (connection number, request bytes)
        self.connections = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        number = self.connections
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length)
                self.requests.append((number, head + body))
                answer = self.answer(len(self.requests))
                writer.write(answer)
                await writer.drain()
                if not answer:
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()


def serve(answer: Callable[[int], bytes], test: Callable[[str, Server], Awaitable[None]]) -> None:
    async def main() -> None:
        server = Server(answer)
        listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        try:
            await test(f"http://127.0.0.1:{port}/hook/%C3%BC?x=1", server)
        finally:
            listener.close()

    asyncio.run(main())


@POSTERS
def test_the_request_is_the_bytes_httpx_sent(poster: Poster) -> None:
    async def test(url: str, server: Server) -> None:
        lean = poster(url, "schedlog-webhook/1", MAX_ANSWER_BYTES)
        assert await lean.post(b'{"a":1}', HEADERS, 10) == 200
        await lean.aclose()
        async with httpx.AsyncClient(
            trust_env=False, headers={"User-Agent": "schedlog-webhook/1"}
        ) as client:
            answer = await client.post(url, content=b'{"a":1}', headers=HEADERS)
            assert answer.status_code == 200
        assert server.requests[0][1] == server.requests[1][1]

    serve(lambda n: OK, test)


BODIES = [
    b"",
    b'{"text":"<script>\\ud800</script>"}',
    "\u00fc\u2028\U0001f600".encode(),
    b"\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
    b"x" * (300 * 1024),
]


@pytest.mark.parametrize("body", BODIES, ids=["empty", "markup", "unicode", "crlf", "huge"])
def test_both_posters_send_the_same_bytes(body: bytes) -> None:
    async def test(url: str, server: Server) -> None:
        for poster in (LeanPoster, StreamPoster):
            sender = poster(url, "schedlog-webhook/1", MAX_ANSWER_BYTES)
            assert await sender.post(body, HEADERS, 10) == 200
            await sender.aclose()
        assert len(server.requests) == 2
        assert server.requests[0][1] == server.requests[1][1]
        assert server.requests[0][1].endswith(b"\r\n\r\n" + body)

    serve(lambda n: OK, test)


@POSTERS
def test_a_connection_is_kept_alive_after_an_answer_read_to_its_end(poster: Poster) -> None:
    async def test(url: str, server: Server) -> None:
        lean = poster(url, "ua", MAX_ANSWER_BYTES)
        for _ in range(3):
            assert await lean.post(b"{}", HEADERS, 10) == 200
        await lean.aclose()
        assert [number for number, _ in server.requests] == [1, 1, 1]

    serve(lambda n: OK, test)


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (MAX_ANSWER_BYTES + 1)
        + b"x" * (MAX_ANSWER_BYTES + 1),
    ],
    ids=["close", "http-1.0", "chunked", "over-64-KiB"],
)
@POSTERS
def test_a_connection_not_read_to_its_end_is_closed(answer: bytes, poster: Poster) -> None:
    async def test(url: str, server: Server) -> None:
        lean = poster(url, "ua", MAX_ANSWER_BYTES)
        assert await lean.post(b"{}", HEADERS, 10) == 200
        assert await lean.post(b"{}", HEADERS, 10) == 200
        await lean.aclose()
        assert [number for number, _ in server.requests] == [1, 2]

    serve(lambda n: answer, test)


@POSTERS
def test_a_compressed_answer_is_not_inflated(poster: Poster) -> None:
    gzip = b"HTTP/1.1 201 Created\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nnope"

    async def test(url: str, server: Server) -> None:
        lean = poster(url, "ua", MAX_ANSWER_BYTES)
        assert await lean.post(b"{}", HEADERS, 10) == 201  # not gzip: inflating would fail
        await lean.aclose()

    serve(lambda n: gzip, test)


@POSTERS
def test_an_informational_answer_is_skipped(poster: Poster) -> None:
    answer = b"HTTP/1.1 100 Continue\r\n\r\n" + OK

    async def test(url: str, server: Server) -> None:
        lean = poster(url, "ua", MAX_ANSWER_BYTES)
        assert await lean.post(b"{}", HEADERS, 10) == 200
        await lean.aclose()

    serve(lambda n: answer, test)


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (b"", "unreachable"),  # closed without answering
        (b"SMTP ready\r\n\r\n", "unreachable"),
        (b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * (80 * 1024) + b"\r\n\r\n", "unreachable"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n", "unreachable"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "unreachable"),
    ],
    ids=["closed", "not-http", "head-too-long", "bad-length", "bad-header"],
)
def test_a_broken_answer_is_a_webhook_error(answer: bytes, kind: str) -> None:
    async def test(url: str, server: Server) -> None:
        sink = WebhookSink(url, b"s" * 32, SystemClock(), timeout_s=10)
        with pytest.raises(WebhookError) as caught:
            await sink._exchange(b"{}", HEADERS)
        assert caught.value.kind == kind
        await sink.aclose()
        stream = StreamPoster(url, "ua", MAX_ANSWER_BYTES)
        with pytest.raises(Exception) as by_stream:  # the readable form fails alike
            await stream.post(b"{}", HEADERS, 10)
        await stream.aclose()
        assert caught.value.args[0].endswith(str(by_stream.value))

    serve(lambda n: answer, test)


@POSTERS
def test_a_connection_the_receiver_closed_while_idle_is_not_used_again(poster: Poster) -> None:
    # The first answer says nothing about closing, then the server closes the connection.
    answers: dict[int, bytes] = {1: OK}

    class Closing(Server):
        async def handle(self, reader: Any, writer: Any) -> None:
            if self.connections == 0:
                self.connections += 1
                head = await reader.readuntil(b"\r\n\r\n")
                body = await reader.readexactly(2)
                self.requests.append((1, head + body))
                writer.write(OK)
                await writer.drain()
                writer.close()  # idle close, as a receiver's keep-alive timeout does
                await writer.wait_closed()
                return
            await super().handle(reader, writer)

    async def main() -> None:
        server = Closing(lambda n: answers.get(n, OK))
        listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        lean = poster(f"http://127.0.0.1:{port}/", "ua", MAX_ANSWER_BYTES)
        try:
            assert await lean.post(b"{}", HEADERS, 10) == 200
            for _ in range(100):  # until the loop has seen the close
                if lean._idle and _at_eof(lean._idle[0]):
                    break
                await asyncio.sleep(0)
            assert await lean.post(b"{}", HEADERS, 10) == 200
            assert [number for number, _ in server.requests] == [1, 2]
        finally:
            await lean.aclose()
            listener.close()

    asyncio.run(main())


def _at_eof(idle: Any) -> bool:
    """Whether an idle connection of either poster has seen the receiver's close."""
    return bool(idle.at_eof() if hasattr(idle, "at_eof") else idle.reader.at_eof())


def test_the_sink_uses_httpx_only_for_a_transport_or_user_info() -> None:
    clock = SystemClock()
    assert WebhookSink("http://127.0.0.1:9/", b"s" * 32, clock)._lean is not None
    mock = httpx.MockTransport(lambda request: httpx.Response(200))
    assert WebhookSink("http://127.0.0.1:9/", b"s" * 32, clock, transport=mock)._lean is None
    assert WebhookSink("http://u:p@127.0.0.1:9/", b"s" * 32, clock)._lean is None
    with pytest.raises(ValueError):
        LeanPoster("http://u:p@127.0.0.1:9/", "ua", 10)
    with pytest.raises(ValueError, match="cannot be sent"):
        LeanPoster("http://127.0.0.1:9/", "ua", 10).request(b"", {"X": "a\r\nInjected: 1"})


def _self_signed(tmp_path: Any) -> tuple[str, str]:
    """A certificate for 127.0.0.1 signed by itself, and its key (PEM paths)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    start = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=36500))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_path), str(key_path)


@POSTERS
def test_tls_is_verified_and_offers_http_1_1(tmp_path: Any, poster: Poster) -> None:
    import ssl

    cert, key = _self_signed(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    server_ctx.set_alpn_protocols(["h2", "http/1.1"])
    alpn: list[str | None] = []

    async def main() -> None:
        server = Server(lambda n: OK)

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            alpn.append(writer.get_extra_info("ssl_object").selected_alpn_protocol())
            await server.handle(reader, writer)

        listener = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_ctx)
        url = f"https://127.0.0.1:{listener.sockets[0].getsockname()[1]}/hook"
        try:
            sink = WebhookSink(url, b"s" * 32, SystemClock(), timeout_s=10)
            with pytest.raises(WebhookError, match="CERTIFICATE_VERIFY_FAILED") as caught:
                await sink._exchange(b"{}", HEADERS)  # a certificate no CA vouches for
            assert caught.value.kind == "unreachable"
            await sink.aclose()
            lean = poster(url, "ua", MAX_ANSWER_BYTES)
            assert lean._ssl is not None
            lean._ssl.load_verify_locations(cert)  # now trusted: the exchange goes through
            assert await lean.post(b"{}", HEADERS, 10) == 200
            await lean.aclose()
        finally:
            listener.close()

    asyncio.run(main())
    assert alpn[-1] == "http/1.1"
