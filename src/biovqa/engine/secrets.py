"""Keeping credentials out of everything a run writes or prints.

A :class:`Redactor` knows the secrets of one run — the API key read from ``api_key_env`` and any
user/password inside ``--base-url`` (also in the ``Basic`` form an HTTP client sends) — and replaces
each occurrence with ``***``. It also masks ``Bearer``/``Basic`` credentials and URL user info
whatever their value, so a server that echoes an ``Authorization`` header (a 401 body, say) never
puts the key into the store, the ``error`` column, ``run.json`` or the terminal. A known secret is
masked whatever its length (a 5-character key echoed by a server too), and every occurrence is
counted: the run card's ``redactions`` says how many were masked (:meth:`Redactor.summary`).
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any
from urllib.parse import unquote, urlsplit

from biovqa.engine.backends.base import Reply

MASK = "***"
#: A key shorter than this is still masked wherever it appears (a server may echo it in any field),
#: but the run card warns that masking it may also have hidden ordinary text of the replies.
SHORT_SECRET_LENGTH = 16
_AUTH_PATTERN = re.compile(r"(?i)\b(bearer|basic)(\s+|%20)[A-Za-z0-9._~+/=\-]{4,}")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@'\"]+@")


def url_secrets(url: str | None) -> list[str]:
    """The credentials inside ``url`` (user, password, and their HTTP Basic encoding)."""
    if not url:
        return []
    parts = urlsplit(url)
    found: list[str] = []
    if parts.username or parts.password:
        user, password = unquote(parts.username or ""), unquote(parts.password or "")
        found += [v for v in (parts.username, parts.password, user, password) if v]
        found.append(base64.b64encode(f"{user}:{password}".encode()).decode())
    return found


class Redactor:
    """Replaces known secrets and credential-looking fragments in text."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        unique = {s for s in secrets if s}
        self.secrets = sorted(unique, key=len, reverse=True)
        #: How many occurrences of a known secret were masked, over the redactor's life.
        self.masked = 0

    def summary(self) -> dict[str, Any] | None:
        """What the run card says about redaction: the number of masked occurrences and, for a
        key shorter than :data:`SHORT_SECRET_LENGTH`, a warning (None when nothing was masked)."""
        if not self.masked:
            return None
        facts: dict[str, Any] = {"masked": self.masked}
        if any(len(secret) < SHORT_SECRET_LENGTH for secret in self.secrets):
            facts["warning"] = (f"a secret shorter than {SHORT_SECRET_LENGTH} characters was masked as {MASK}; "
                                "ordinary text that happened to contain it was masked too")
        return facts

    @classmethod
    def for_options(cls, backend_options: dict[str, Any]) -> Redactor:
        """The secrets of a run: the key in ``api_key_env``'s variable and ``base_url``'s user info."""
        secrets = url_secrets(backend_options.get("base_url"))
        env = backend_options.get("api_key_env")
        if env and os.environ.get(str(env)):
            secrets.append(os.environ[str(env)])
        return cls(secrets)

    def known(self, value: str | None) -> str | None:
        """Only the known secrets masked (for model replies, whose words must stay as they are)."""
        if not value:
            return value
        for secret in self.secrets:
            found = value.count(secret)
            if found:
                self.masked += found
                value = value.replace(secret, MASK)
        return value

    def text(self, value: str | None) -> str | None:
        """Known secrets, ``Bearer``/``Basic`` credentials and URL user info masked."""
        value = self.known(value)
        if not value:
            return value
        value = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", value)
        return _AUTH_PATTERN.sub(lambda m: f"{m.group(1)} {MASK}", value)

    def reply(self, reply: Reply) -> Reply:
        text, error = self.known(reply.text), self.text(reply.error)
        if text == reply.text and error == reply.error:
            return reply
        return replace(reply, text=text, error=error)

    def value(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value (dicts, lists)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value
