"""The ``openai`` backend: any OpenAI-compatible ``/v1/chat/completions`` endpoint (and
``/v1/completions`` for raw-mode requests).

Works with vLLM, SGLang, ``transformers serve`` and llama.cpp servers as well as hosted APIs. A
batch is sent as concurrent requests over one ``httpx.AsyncClient``:

* bounded concurrency (a semaphore of ``concurrency`` requests in flight) and an optional
  requests-per-minute limit (request starts spaced ≥ 60/rpm seconds apart);
* a per-attempt timeout of ``timeout_s``;
* retries on 408/409/425/429/5xx, connection errors and timeouts, at most ``max_retries`` per
  request, waiting ``delay = U(0, min(cap, base·2^attempt))`` (exponential backoff with full
  jitter) or, when the server sends ``Retry-After`` (seconds or an HTTP date), at least that long
  (capped at ``retry_after_cap_s``); other 4xx fail at once;
* a request that still fails becomes ``Reply(status="failed", error=...)`` — never an answer;
* replies are read in every shape the API allows (:func:`reply_text`): ``content`` as text or a
  list of parts, null ``content`` with a ``refusal`` (failed, quoting it), a ``usage`` that is
  absent or not an object (token counts null, counted as ``usage_unreadable`` in the run card); a
  reply that cannot be stored (a lone surrogate) fails its item only.

Messages follow paper App. B.2: an optional system turn, then one user turn holding the image (a
base64 ``data:`` URL) before the text. Decoding: ``temperature=0``, ``max_tokens`` from the request.
A raw-mode request (``Request.mode == "raw"``, BAGEL paper App. A.1.2) goes to the legacy completions
endpoint as ``{"prompt": raw_prompt_text(request)}`` — no chat template on the server — and its
reply is ``choices[0].text``; a raw request with an image fails (completions take no image).

The API key is read from the environment variable named by ``api_key_env`` and only ever placed in
the ``Authorization`` header: it is not logged, not stored in ``describe()``, not in errors.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import email.utils
import json
import mimetypes
import os
import random
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from biovqa.errors import BiovqaError
from biovqa.engine.presets import get_preset
from biovqa.engine.backends.base import Reply, Request, raw_prompt_text

#: HTTP statuses worth another attempt (rate limits, server trouble); other 4xx are final.
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


# ------------------------------------------------------------------------------ request building


def image_data_url(path: Path | str) -> str:
    """``data:<mime>;base64,<bytes>`` for an image file (mime from the suffix, PNG if unknown)."""
    path = Path(path)
    mime = mimetypes.guess_type(path.name)[0] or "image/png"
    encoded = base64.b64encode(path.read_bytes()).decode("ascii")
    return f"data:{mime};base64,{encoded}"


def build_chat_messages(request: Request, image_url: str | None) -> list[dict[str, Any]]:
    """OpenAI chat messages for one request: system turn (if any), then the user turn with the
    image part first and the text part second (paper App. B.2, image-first layout)."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    content: list[dict[str, Any]] = []
    if image_url is not None:
        content.append({"type": "image_url", "image_url": {"url": image_url}})
    content.append({"type": "text", "text": request.prompt})
    messages.append({"role": "user", "content": content})
    return messages


def build_request_body(
    request: Request, image_url: str | None, *, model: str, extra_body: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The JSON body of one chat-completion call: greedy (``temperature=0``), ``max_tokens``."""
    body: dict[str, Any] = {
        "model": model,
        "messages": build_chat_messages(request, image_url),
        "max_tokens": request.max_new_tokens,
        "temperature": 0,
    }
    if extra_body:
        body.update(extra_body)
    return body


def build_completion_body(
    request: Request, *, model: str, extra_body: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The JSON body of one legacy ``/completions`` call (raw mode): the raw prompt text, greedy
    (``temperature=0``), ``max_tokens``."""
    body: dict[str, Any] = {
        "model": model,
        "prompt": raw_prompt_text(request),
        "max_tokens": request.max_new_tokens,
        "temperature": 0,
    }
    if extra_body:
        body.update(extra_body)
    return body


def endpoint_for(request: Request) -> str:
    """The path a request is posted to (relative to the base URL)."""
    return "/completions" if request.mode == "raw" else "/chat/completions"


# ------------------------------------------------------------------------------------ replies

#: Content-part types whose ``text`` is the model's answer (chat completions and the responses-style
#: ``output_text`` some servers send inside chat replies).
TEXT_PART_TYPES = frozenset({"text", "output_text"})


def reply_text(data: Any, *, raw: bool = False) -> str:
    """The answer in a (chat or, with ``raw``, legacy completions) reply body, in every shape the
    OpenAI API allows: ``content`` as text or as a list of parts (the text parts joined, in order),
    null ``content`` with a ``refusal`` (a final failure quoting it), no usable text at all (a final
    failure — never an empty answer). A reply with a lone surrogate (text that is not Unicode) is
    a final failure too: it could not be stored. Raises ``_RetryableFailure`` for a body of the
    wrong shape (a proxy's error page, a truncated reply) and ``_FinalFailure`` otherwise."""
    try:
        choice = data["choices"][0]
        if not isinstance(choice, dict):
            raise TypeError(f"choices[0] is a {type(choice).__name__}, not an object")
        if raw:
            content: Any = choice["text"]
            refusal = None
        else:
            message = choice["message"]
            if not isinstance(message, dict):
                raise TypeError(f"choices[0].message is a {type(message).__name__}, not an object")
            content, refusal = message.get("content"), message.get("refusal")
    except (KeyError, IndexError, TypeError) as error:
        raise _RetryableFailure(f"malformed response: {type(error).__name__}: {error}")
    if isinstance(content, list):
        parts = [part.get("text") for part in content
                 if isinstance(part, dict) and part.get("type") in TEXT_PART_TYPES]
        texts = [part for part in parts if isinstance(part, str)]
        if not texts:
            kinds = sorted({str(p.get("type")) if isinstance(p, dict) else type(p).__name__ for p in content})
            raise _FinalFailure(f"the reply's content holds no text part (parts: {', '.join(kinds) or 'none'})")
        content = "".join(texts)
    if content is None:
        if isinstance(refusal, str) and refusal:
            raise _FinalFailure(f"the model refused: {safe_text(refusal)[:300]}")
        raise _FinalFailure("the reply has no content (null)")
    if not isinstance(content, str):
        raise _FinalFailure(f"the reply's content is a {type(content).__name__}, not text")
    if safe_text(content) != content:
        raise _FinalFailure(f"the reply is not valid Unicode (a lone surrogate): {safe_text(content)[:120]}")
    return content


def usage_tokens(data: Any) -> tuple[int | None, int | None, bool]:
    """(prompt tokens, completion tokens, whether ``usage`` was readable) of a reply body: counts
    that are not non-negative integers are None; a ``usage`` that is absent, a list or any other
    non-object is unreadable (counted in the run card), never a reason to lose the answer."""
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return None, None, False

    def count(key: str) -> int | None:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    prompt, completion = count("prompt_tokens"), count("completion_tokens")
    return prompt, completion, prompt is not None or completion is not None


def safe_text(text: str) -> str:
    """``text`` with lone surrogates written as ``\\udXXX`` escapes, so it can be stored and printed."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# ------------------------------------------------------------------------------------ retries


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date (RFC 9110
    §10.2.3). None when absent or unreadable; never negative."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if moment is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, moment.timestamp() - current)


def backoff_delay(
    attempt: int,
    *,
    base_s: float,
    cap_s: float,
    generator: random.Random,
    retry_after_s: float | None = None,
    retry_after_cap_s: float = 120.0,
) -> float:
    """Wait before retry number ``attempt`` (0-based): full jitter U(0, min(cap, base·2^attempt)),
    raised to the server's ``Retry-After`` when it sent one (that part capped at
    ``retry_after_cap_s``)."""
    jittered = generator.uniform(0.0, min(cap_s, base_s * (2.0**attempt)))
    if retry_after_s is None:
        return jittered
    return max(jittered, min(retry_after_s, retry_after_cap_s))


class RequestRateLimiter:
    """Spaces request starts at least ``60 / rpm`` seconds apart (None: no limit)."""

    def __init__(self, rpm: float | None) -> None:
        if rpm is not None and rpm <= 0:
            raise BiovqaError(f"rpm must be > 0, got {rpm}", field="rpm")
        self.interval_s = 0.0 if rpm is None else 60.0 / rpm
        self._next_start = 0.0
        self._lock: asyncio.Lock | None = None

    async def wait(self) -> None:
        if self.interval_s == 0.0:
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + self.interval_s
        if start > now:
            await asyncio.sleep(start - now)


def _public_url(url: str) -> str:
    """``url`` without user info, query or fragment (they may carry credentials)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class _RetryableFailure(Exception):
    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class _FinalFailure(Exception):
    pass


# ------------------------------------------------------------------------------------ backend


class OpenAIBackend:
    """Concurrent, rate-limited, retrying chat-completion client for one model on one endpoint."""

    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None,
        api_key_env: str | None,
        concurrency: int = 8,
        rpm: float | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 6,
        backoff_base_s: float = 0.5,
        backoff_cap_s: float = 30.0,
        retry_after_cap_s: float = 120.0,
        extra_body: dict[str, Any] | None = None,
        revision: str | None = None,
        preset_key: str | None = None,
        seed: int = 0,
        ignored_options: Sequence[str] = (),
    ) -> None:
        if concurrency < 1:
            raise BiovqaError(f"concurrency must be ≥ 1, got {concurrency}", field="concurrency")
        if max_retries < 0:
            raise BiovqaError(f"max_retries must be ≥ 0, got {max_retries}", field="max_retries")
        if timeout_s <= 0:
            raise BiovqaError(f"timeout_s must be > 0, got {timeout_s}", field="timeout_s")
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BiovqaError(
                f"base URL {_public_url(base_url)!r} is not an http(s) URL",
                field="base_url",
                hint="e.g. --base-url http://127.0.0.1:8000/v1",
            )
        self.model = model
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.api_key_env = api_key_env
        self.concurrency = int(concurrency)
        self.rpm = rpm
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_base_s = float(backoff_base_s)
        self.backoff_cap_s = float(backoff_cap_s)
        self.retry_after_cap_s = float(retry_after_cap_s)
        self.extra_body = dict(extra_body or {})
        self.revision = revision
        self.preset_key = preset_key
        self.ignored_options = tuple(ignored_options)
        #: Batch hints for the engine: batches big enough to keep every slot busy (a batch ends
        #: with a drain); prompt tokens cost a client nothing, so the token budget is loose.
        self.max_batch_items = max(64, 16 * self.concurrency)
        self.batch_tokens = 4_000_000
        self._generator = random.Random(seed)
        self._rate_limiter = RequestRateLimiter(rpm)
        self._loop = asyncio.new_event_loop()
        self._client: Any = None
        #: Attempts made and retries spent over the backend's life (for the run card and tests).
        self.attempts = 0
        self.retries = 0
        #: Replies whose ``usage`` was absent or unreadable (their token counts are null).
        self.usage_unreadable = 0

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, base_url={_public_url(self.base_url)!r})"

    def describe(self) -> dict[str, Any]:
        """Run-card facts (never the API key, nor URL credentials or query strings)."""
        import httpx

        return {
            "backend": self.name,
            "backend_version": httpx.__version__,
            "httpx_version": httpx.__version__,
            "model": self.model,
            "preset": self.preset_key,
            "revision": self.revision or f"endpoint:{self.model}",
            "base_url": _public_url(self.base_url),
            "api_key_env": self.api_key_env,
            "concurrency": self.concurrency,
            "rpm": self.rpm,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "backoff": {
                "base_s": self.backoff_base_s,
                "cap_s": self.backoff_cap_s,
                "retry_after_cap_s": self.retry_after_cap_s,
                "jitter": "full",
            },
            "decoding": {"temperature": 0, **{k: v for k, v in self.extra_body.items()}},
            "attempts": self.attempts,
            "retries": self.retries,
            "usage_unreadable": self.usage_unreadable,
            **({"ignored_options": list(self.ignored_options)} if self.ignored_options else {}),
        }

    # ---------------------------------------------------------------------------------- generate
    def generate(self, requests: Sequence[Request]) -> list[Reply]:
        """Send the batch concurrently; one reply per request, in request order."""
        if not requests:
            return []
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._loop.run_until_complete(self._generate_all(list(requests)))
        # Called from inside a running event loop (a notebook, an async engine): run the
        # backend's own loop in a helper thread and wait for it.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(
                self._loop.run_until_complete, self._generate_all(list(requests))
            ).result()

    async def _generate_all(self, requests: list[Request]) -> list[Reply]:
        import httpx

        if self._client is None:
            headers = {"Content-Type": "application/json"}
            if self._api_key:
                headers["Authorization"] = f"Bearer {self._api_key}"
            self._client = httpx.AsyncClient(
                base_url=self.base_url,
                headers=headers,
                timeout=httpx.Timeout(self.timeout_s),
                limits=httpx.Limits(
                    max_connections=self.concurrency, max_keepalive_connections=self.concurrency
                ),
            )
        image_urls: dict[Path, str | BaseException] = {}
        for request in requests:
            if request.image_path is not None and Path(request.image_path) not in image_urls:
                try:
                    image_urls[Path(request.image_path)] = image_data_url(request.image_path)
                except OSError as error:
                    image_urls[Path(request.image_path)] = error
        semaphore = asyncio.Semaphore(self.concurrency)

        async def answer(request: Request) -> Reply:
            if request.mode == "raw" and request.image_path is not None:
                return Reply(key=request.key, text=None, status="failed",
                             error="a raw-mode (completion) request cannot carry an image")
            image_url = None if request.image_path is None else image_urls[Path(request.image_path)]
            if isinstance(image_url, BaseException):
                return Reply(key=request.key, text=None, status="failed", error=f"image: {image_url}")
            async with semaphore:
                try:
                    return await self._answer_with_retries(request, image_url)
                except Exception as error:  # one odd reply fails its item, never the whole run
                    return Reply(key=request.key, text=None, status="failed",
                                 error=safe_text(f"unexpected reply: {type(error).__name__}: {error}"))

        return list(await asyncio.gather(*(answer(request) for request in requests)))

    async def _answer_with_retries(self, request: Request, image_url: str | None) -> Reply:
        raw = request.mode == "raw"
        body = (build_completion_body(request, model=self.model, extra_body=self.extra_body) if raw
                else build_request_body(request, image_url, model=self.model, extra_body=self.extra_body))
        payload = json.dumps(body).encode("utf-8")
        path = endpoint_for(request)
        started = time.perf_counter()
        last_error = "no attempt made"
        for attempt in range(self.max_retries + 1):
            if attempt > 0:
                self.retries += 1
            await self._rate_limiter.wait()
            self.attempts += 1
            try:
                text, prompt_tokens, completion_tokens = await self._attempt(payload, path, raw=raw)
            except _FinalFailure as error:
                last_error = str(error)
                break
            except _RetryableFailure as error:
                last_error = str(error)
                if attempt == self.max_retries:
                    break
                await asyncio.sleep(
                    backoff_delay(
                        attempt,
                        base_s=self.backoff_base_s,
                        cap_s=self.backoff_cap_s,
                        generator=self._generator,
                        retry_after_s=error.retry_after_s,
                        retry_after_cap_s=self.retry_after_cap_s,
                    )
                )
                continue
            return Reply(
                key=request.key,
                text=text,
                latency_s=time.perf_counter() - started,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
            )
        return Reply(
            key=request.key,
            text=None,
            status="failed",
            error=safe_text(f"{last_error} (after {attempt + 1} attempt{'s' if attempt else ''})"),
            latency_s=time.perf_counter() - started,
        )

    async def _attempt(self, payload: bytes, path: str = "/chat/completions", *,
                       raw: bool = False) -> tuple[str, int | None, int | None]:
        """One POST to ``path``; returns (text, prompt tokens, completion tokens) or raises a
        failure kind. ``raw``: a completions reply (``choices[0].text``)."""
        import httpx

        try:
            response = await asyncio.wait_for(
                self._client.post(path, content=payload),
                timeout=self.timeout_s + 1.0,
            )
        except (TimeoutError, httpx.TimeoutException) as error:
            raise _RetryableFailure(f"timeout after {self.timeout_s:g} s ({type(error).__name__})")
        except httpx.TransportError as error:
            raise _RetryableFailure(f"connection error: {type(error).__name__}: {error}")
        if response.status_code != 200:
            snippet = response.text[:300].replace("\n", " ")
            message = f"HTTP {response.status_code}: {snippet}"
            if response.status_code in RETRYABLE_STATUSES or response.status_code >= 500:
                raise _RetryableFailure(
                    message, parse_retry_after(response.headers.get("retry-after"))
                )
            raise _FinalFailure(message)
        try:
            data = response.json()
        except ValueError as error:  # not JSON, or not UTF-8
            raise _RetryableFailure(f"malformed response: {type(error).__name__}: {error}")
        text = reply_text(data, raw=raw)
        prompt_tokens, completion_tokens, usage_read = usage_tokens(data)
        if not usage_read:
            self.usage_unreadable += 1
        return text, prompt_tokens, completion_tokens

    def close(self) -> None:
        """Close the HTTP client and the backend's event loop."""
        if self._loop.is_closed():
            return
        if self._client is not None:
            self._loop.run_until_complete(self._client.aclose())
            self._client = None
        self._loop.close()


def create(
    model: str,
    *,
    base_url: str,
    api_key_env: str | None,
    concurrency: int = 8,
    rpm: float | None = None,
    timeout_s: float = 60,
    max_retries: int = 6,
    **options: Any,
) -> OpenAIBackend:
    """An OpenAI-compatible client for ``model`` at ``base_url`` (e.g. ``http://host:8000/v1``).

    ``api_key_env`` names the environment variable holding the API key (None: no key, as for a
    local server). Extra options: ``backoff_base_s`` (0.5), ``backoff_cap_s`` (30),
    ``retry_after_cap_s`` (120), ``extra_body`` (dict merged into every request body),
    ``revision`` (recorded in the run card), ``seed`` (jitter generator).
    A preset key or display name is sent as its checkpoint id.
    """
    api_key = None
    if api_key_env:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise BiovqaError(
                f"environment variable {api_key_env} is not set or empty",
                field="api_key_env",
                hint=f"export {api_key_env}=... before the run (the key is never written to disk)",
            )
    known = {"backoff_base_s", "backoff_cap_s", "retry_after_cap_s", "extra_body", "revision", "seed"}
    ignored = {key: options.pop(key) for key in sorted(set(options) - known)}
    if ignored:
        warnings.warn(f"openai backend ignores options {sorted(ignored)}", RuntimeWarning, stacklevel=2)
    preset = get_preset(model)
    served_model = (
        preset.checkpoint
        if model.lower() in (preset.key, preset.display_name.lower()) and preset.family != "default"
        else model
    )
    return OpenAIBackend(
        served_model,
        base_url=base_url,
        api_key=api_key,
        api_key_env=api_key_env,
        concurrency=concurrency,
        rpm=rpm,
        timeout_s=timeout_s,
        max_retries=max_retries,
        preset_key=preset.key,
        ignored_options=sorted(ignored),
        **options,
    )
