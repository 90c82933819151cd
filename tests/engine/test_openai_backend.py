"""The openai backend: request building and retry arithmetic (fast), then end to end against a real
``transformers serve`` on 127.0.0.1 with the tiny LLaVA, directly and through a fault-injecting
proxy (429 with Retry-After in seconds and as an HTTP date, 500/503, 400, connection resets,
timeouts). All traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import json
import random
import socket
import struct
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from biovqa.errors import BiovqaError
from biovqa.engine.backends.base import Backend, Request
from biovqa.engine.backends.openai import (
    RequestRateLimiter,
    backoff_delay,
    build_chat_messages,
    build_request_body,
    create,
    image_data_url,
    parse_retry_after,
)

#: The client's per-attempt timeout in the fault test, and how long a "timeout" fault holds the
#: connection. Generous, because a loaded 2-core CI machine can take seconds per real request.
TIMEOUT_S = 8.0
HOLD_S = TIMEOUT_S + 2.0

SECRET = "sk-test-SECRET-never-written-0123456789"

# ------------------------------------------------------------------------------ fast unit tests


def test_messages_put_the_image_before_the_text(tiny_images: list[Path]) -> None:
    request = Request(key="k", item_id="i", prompt="Which order?", image_path=tiny_images[0],
                      system="Reply with only the term.", max_new_tokens=15)
    url = image_data_url(tiny_images[0])
    messages = build_chat_messages(request, url)
    assert messages[0] == {"role": "system", "content": "Reply with only the term."}
    assert [part["type"] for part in messages[1]["content"]] == ["image_url", "text"]
    assert messages[1]["content"][1]["text"] == "Which order?"
    header, encoded = url.split(",", 1)
    assert header == "data:image/png;base64"
    assert base64.b64decode(encoded) == tiny_images[0].read_bytes()


def test_request_body_is_greedy_with_the_token_cap() -> None:
    request = Request(key="k", item_id="i", prompt="Name it.", max_new_tokens=8)
    body = build_request_body(request, None, model="m", extra_body={"seed": 3})
    assert body["temperature"] == 0
    assert body["max_tokens"] == 8
    assert body["seed"] == 3
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Name it."}]}]


@pytest.mark.parametrize(
    ("header", "expected"),
    [("0", 0.0), ("2", 2.0), ("1.5", 1.5), ("-3", 0.0), ("", None), (None, None), ("soon", None)],
)
def test_retry_after_in_seconds(header: str | None, expected: float | None) -> None:
    assert parse_retry_after(header) == expected


def test_retry_after_as_an_http_date() -> None:
    now = 1_800_000_000.0
    assert parse_retry_after(email.utils.formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30)
    assert parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now=now) == 0.0


def test_backoff_is_full_jitter_under_a_growing_cap() -> None:
    generator = random.Random(1)
    for attempt in range(8):
        ceiling = min(4.0, 0.5 * 2**attempt)
        delays = [backoff_delay(attempt, base_s=0.5, cap_s=4.0, generator=generator) for _ in range(200)]
        assert all(0.0 <= delay <= ceiling for delay in delays)
        assert max(delays) > 0.8 * ceiling  # the whole range is used (full jitter)


def test_backoff_honours_retry_after_up_to_its_cap() -> None:
    generator = random.Random(2)
    assert backoff_delay(0, base_s=0.1, cap_s=1.0, generator=generator, retry_after_s=5.0) == 5.0
    assert backoff_delay(0, base_s=0.1, cap_s=1.0, generator=generator, retry_after_s=500.0,
                         retry_after_cap_s=60.0) == 60.0


def test_rate_limiter_spaces_request_starts() -> None:
    import asyncio

    limiter = RequestRateLimiter(rpm=1200)  # one start per 0.05 s

    async def five_starts() -> list[float]:
        starts = []
        for _ in range(5):
            await limiter.wait()
            starts.append(time.monotonic())
        return starts

    starts = asyncio.run(five_starts())
    assert starts[-1] - starts[0] >= 4 * 0.05 - 1e-3
    with pytest.raises(BiovqaError, match="rpm"):
        RequestRateLimiter(rpm=0)


def test_a_missing_api_key_variable_is_a_setup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BIOVQA_TEST_KEY", raising=False)
    with pytest.raises(BiovqaError, match="BIOVQA_TEST_KEY"):
        create("m", base_url="http://127.0.0.1:9/v1", api_key_env="BIOVQA_TEST_KEY")


def test_the_api_key_is_never_described(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIOVQA_TEST_KEY", SECRET)
    backend = create("m", base_url="http://user:pw@127.0.0.1:9/v1?token=abc",
                     api_key_env="BIOVQA_TEST_KEY")
    try:
        assert isinstance(backend, Backend)
        described = json.dumps(backend.describe()) + repr(backend)
        assert SECRET not in described
        assert "pw" not in described and "token=abc" not in described
        assert backend.describe()["api_key_env"] == "BIOVQA_TEST_KEY"
    finally:
        backend.close()


def test_bad_settings_are_refused() -> None:
    with pytest.raises(BiovqaError, match="base URL"):
        create("m", base_url="127.0.0.1:8000", api_key_env=None)
    with pytest.raises(BiovqaError, match="concurrency"):
        create("m", base_url="http://127.0.0.1:9/v1", api_key_env=None, concurrency=0)


# ------------------------------------------------------------------------- fault-injecting proxy


class FaultProxy(ThreadingHTTPServer):
    """A loopback HTTP proxy to ``upstream`` that misbehaves per request, as scripted.

    ``script[prompt_tag]`` is a list of faults for successive attempts of the request whose user
    text contains the tag; an attempt past the end of the list is forwarded. Faults: ``"429"``
    (Retry-After: 1), ``"429-date"`` (Retry-After as an HTTP date 2 s ahead;
    whole seconds, so 1–2 s), ``"500"``, ``"503"``,
    ``"400"``, ``"reset"`` (TCP reset, no response), ``"timeout"`` (hold the connection past the
    client's timeout), ``"always-503"`` / ``"always-reset"`` (every attempt).
    """

    daemon_threads = True

    def __init__(self, upstream_port: int, script: dict[str, list[str]]) -> None:
        super().__init__(("127.0.0.1", 0), FaultHandler)
        self.upstream_port = upstream_port
        self.script = script
        self.lock = threading.Lock()
        self.attempts: dict[str, list[float]] = {}
        self.forwarded: dict[str, int] = {}
        self.authorization: set[str] = set()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A reset connection makes the handler's final flush fail: expected, stay quiet."""

    def tag_of(self, body: dict[str, Any]) -> str:
        text = body["messages"][-1]["content"][-1]["text"]
        return next((tag for tag in self.script if tag in text), text)

    def fault_for(self, tag: str) -> str | None:
        with self.lock:
            attempts = self.attempts.setdefault(tag, [])
            attempts.append(time.monotonic())
            plan = self.script.get(tag, [])
            if plan and plan[0].startswith("always-"):
                return plan[0].removeprefix("always-")
            index = len(attempts) - 1
            return plan[index] if index < len(plan) else None


class FaultHandler(BaseHTTPRequestHandler):
    server: FaultProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        payload = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.authorization.add(self.headers.get("Authorization", ""))
        tag = self.server.tag_of(json.loads(payload))
        fault = self.server.fault_for(tag)
        if fault == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if fault == "timeout":
            time.sleep(HOLD_S)
            self.close_connection = True
            return
        if fault is not None:
            status = int(fault.split("-")[0])
            headers = {}
            if fault == "429":
                headers["Retry-After"] = "1"
            elif fault == "429-date":
                headers["Retry-After"] = email.utils.formatdate(time.time() + 2.0, usegmt=True)
            self.reply(status, json.dumps({"error": {"message": f"injected {fault}"}}).encode(), headers)
            return
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=60)
        upstream.request("POST", self.path, body=payload, headers={"Content-Type": "application/json"})
        response = upstream.getresponse()
        body = response.read()
        upstream.close()
        with self.server.lock:
            self.server.forwarded[tag] = self.server.forwarded.get(tag, 0) + 1
        self.reply(response.status, body, {})

    def reply(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture()
def fault_proxy(transformers_server: dict[str, str]) -> Iterator[FaultProxy]:
    upstream_port = int(transformers_server["base_url"].split(":")[2].split("/")[0])
    proxy = FaultProxy(upstream_port, script={})
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    yield proxy
    proxy.shutdown()
    proxy.server_close()


def image_requests(images: list[Path], count: int) -> list[Request]:
    return [
        Request(
            key=f"key-{index}",
            item_id=f"item-{index}",
            prompt=f"q{index}: What is the order of the animal shown in this image?",
            image_path=images[index % len(images)],
            system="Reply with only the requested term." if index % 3 == 0 else None,
            max_new_tokens=3 + index % 4,
        )
        for index in range(count)
    ]


# --------------------------------------------------------------------- against a real server


@pytest.mark.slow
@pytest.mark.models
def test_real_server_replies_match_offline_generation(
    transformers_server: dict[str, str], tiny_images: list[Path]
) -> None:
    from biovqa.engine.backends.transformers import create as create_local

    requests = image_requests(tiny_images, 6)
    requests.append(Request(key="text", item_id="text", prompt="Name a genus.", max_new_tokens=4))
    backend = create(transformers_server["model"], base_url=transformers_server["base_url"],
                     api_key_env=None, concurrency=3)
    try:
        replies = backend.generate(requests)
    finally:
        backend.close()
    assert [reply.key for reply in replies] == [request.key for request in requests]
    assert all(reply.status == "ok" for reply in replies), [reply.error for reply in replies]
    local = create_local(transformers_server["model"], device="cpu")
    try:
        offline = local.generate(requests)
    finally:
        local.close()
    # Same prompt token counts (so the image and system turn reached the server) and same text.
    assert [(r.prompt_tokens, r.completion_tokens, r.text) for r in replies] == [
        (r.prompt_tokens, r.completion_tokens, r.text) for r in offline
    ]


@pytest.mark.slow
@pytest.mark.models
def test_faults_are_retried_boundedly_and_final_failures_recorded(
    transformers_server: dict[str, str],
    fault_proxy: FaultProxy,
    tiny_images: list[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fault_proxy.script.update(
        {
            "q1:": ["429"],
            "q2:": ["429-date"],
            "q3:": ["500", "500"],
            "q4:": ["reset"],
            "q5:": ["timeout"],
            "q6:": ["always-503"],
            "q7:": ["400"],
            "q8:": ["always-reset"],
        }
    )
    monkeypatch.setenv("BIOVQA_TEST_KEY", SECRET)
    max_retries = 3
    backend = create(
        transformers_server["model"],
        base_url=f"http://127.0.0.1:{fault_proxy.server_address[1]}/v1",
        api_key_env="BIOVQA_TEST_KEY",
        concurrency=4,
        timeout_s=TIMEOUT_S,
        max_retries=max_retries,
        backoff_base_s=0.05,
        backoff_cap_s=0.2,
    )
    requests = image_requests(tiny_images, 12)
    try:
        started = time.monotonic()
        replies = backend.generate(requests)
        elapsed = time.monotonic() - started
    finally:
        backend.close()

    # One reply per request, in order, none recorded twice.
    assert [reply.key for reply in replies] == [request.key for request in requests]
    status = {reply.key: reply.status for reply in replies}
    failed = {key for key, value in status.items() if value == "failed"}
    assert failed == {"key-6", "key-7", "key-8"}, {r.key: r.error for r in replies if r.error}
    for reply in replies:
        if reply.status == "failed":
            assert reply.text is None and reply.error
        else:
            assert isinstance(reply.text, str) and reply.completion_tokens is not None
    assert "503" in replies[6].error and f"{max_retries + 1} attempts" in replies[6].error
    assert "400" in replies[7].error and "1 attempt" in replies[7].error

    attempts = {tag: len(times) for tag, times in fault_proxy.attempts.items()}
    assert attempts["q6:"] == max_retries + 1  # retries bounded
    assert attempts["q8:"] == max_retries + 1
    assert attempts["q7:"] == 1  # a client error is not retried
    assert attempts["q3:"] == 3 and attempts["q1:"] == 2 and attempts["q4:"] == 2
    assert attempts["q5:"] == 2
    # Every answered request reached the model exactly once; failed ones never did.
    answered_tags = {f"q{index}:" for index in range(12)} - {"q6:", "q7:", "q8:"}
    forwarded_by_tag: dict[str, int] = {}
    for tag, count in fault_proxy.forwarded.items():
        short = tag.split(" ")[0]
        forwarded_by_tag[short] = forwarded_by_tag.get(short, 0) + count
    assert forwarded_by_tag == {tag: 1 for tag in answered_tags}
    # Retry-After was honoured (≥ 1 s between the 429 and the retry), in both header forms.
    for tag in ("q1:", "q2:"):
        first, second = fault_proxy.attempts[tag]
        assert second - first >= 0.9
    assert elapsed < 120
    # The key travelled only as the bearer token.
    assert fault_proxy.authorization == {f"Bearer {SECRET}"}


@pytest.mark.slow
@pytest.mark.models
def test_generate_works_inside_a_running_event_loop(
    transformers_server: dict[str, str], tiny_images: list[Path]
) -> None:
    import asyncio

    backend = create(transformers_server["model"], base_url=transformers_server["base_url"],
                     api_key_env=None, rpm=600)
    requests = image_requests(tiny_images, 2)

    async def from_async_code() -> list:
        return backend.generate(requests)

    try:
        replies = asyncio.run(from_async_code())
        again = backend.generate(requests)  # and the backend's own loop still works afterwards
    finally:
        backend.close()
    assert [r.status for r in replies] == ["ok", "ok"]
    assert [r.text for r in replies] == [r.text for r in again]


# ------------------------------------------------- reply shapes, from a scripted loopback server

REPLY_SHAPES: dict[str, tuple[bytes, str, str | None]] = {
    # name: (reply body, expected status, expected text or a fragment of the error)
    "content text": (b"", "ok", "Passeriformes"),
    "content parts": (json.dumps({"choices": [{"message": {"role": "assistant", "content": [
        {"type": "text", "text": "Passeri"}, {"type": "image_url", "image_url": {"url": "x"}},
        {"type": "text", "text": "formes"}]}}]}).encode(), "ok", "Passeriformes"),
    "refusal": (json.dumps({"choices": [{"message": {"content": None, "refusal": "I cannot help"}}]}).encode(),
                "failed", "refused: I cannot help"),
    "null content": (json.dumps({"choices": [{"message": {"content": None}}]}).encode(), "failed", "no content"),
    "parts without text": (json.dumps({"choices": [{"message": {"content": [{"type": "refusal",
                                                                            "refusal": "no"}]}}]}).encode(),
                           "failed", "no text part"),
    "content a number": (json.dumps({"choices": [{"message": {"content": 7}}]}).encode(), "failed", "not text"),
    "lone surrogate": (b'{"choices": [{"message": {"content": "Passer\\ud800iformes"}}]}', "failed",
                       "lone surrogate"),
}


@pytest.mark.parametrize("shape", sorted(REPLY_SHAPES))
def test_every_reply_shape_is_read_or_failed_never_an_empty_answer(shape: str) -> None:
    from fixtures.scripted_server import chat_reply, scripted_server

    body, status, expected = REPLY_SHAPES[shape]
    with scripted_server(lambda request: body or chat_reply()) as server:
        backend = create("m", base_url=server.base_url, api_key_env=None, max_retries=0)
        try:
            [reply] = backend.generate([Request(key="k", item_id="i", prompt="Which order?")])
        finally:
            backend.close()
    assert reply.status == status, reply
    if status == "ok":
        assert reply.text == expected
    else:
        assert reply.text is None and expected in (reply.error or ""), reply
        (reply.error or "").encode("utf-8")  # storable: no lone surrogate in the error either


@pytest.mark.parametrize("usage", [[], "12", None, {"prompt_tokens": "x", "completion_tokens": -1}, 3])
def test_an_odd_usage_keeps_the_answer_and_is_counted(usage: Any) -> None:
    from fixtures.scripted_server import chat_reply, scripted_server

    reply_body = chat_reply(usage=usage, with_usage=usage is not None)
    with scripted_server(lambda request: reply_body) as server:
        backend = create("m", base_url=server.base_url, api_key_env=None, max_retries=0)
        try:
            replies = backend.generate([Request(key=f"k{n}", item_id=f"i{n}", prompt="?") for n in range(3)])
            facts = backend.describe()
        finally:
            backend.close()
    assert [(r.status, r.text, r.prompt_tokens, r.completion_tokens) for r in replies] == \
        [("ok", "Passeriformes", None, None)] * 3
    assert facts["usage_unreadable"] == 3


def test_a_short_key_echoed_by_the_server_is_masked_and_counted() -> None:
    from biovqa.engine.secrets import Redactor

    redactor = Redactor(["k3y5Z"])
    assert redactor.known("your key is k3y5Z, k3y5Z!") == "your key is ***, ***!"
    assert redactor.text("HTTP 401: bad key k3y5Z") == "HTTP 401: bad key ***"
    summary = redactor.summary()
    assert summary is not None and summary["masked"] == 3 and "shorter than" in summary["warning"]
    assert Redactor(["k3y5Z"]).summary() is None  # nothing masked, nothing said
