"""Typed adapter failures: the few faults that do raise (chat after retries, keys) instead of returning a status."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from searchtrace.store import BadInput

if TYPE_CHECKING:
    from searchtrace.adapters._types import RetryInfo


class AdapterError(Exception):
    """Base of every error an adapter raises; messages never contain a key value."""


class ChatError(AdapterError):
    """A chat completion failed for good (after retries): status of docs/reference/events.md, the provider's message, the retries."""

    def __init__(
        self,
        status: str,
        message: str,
        retries: list[RetryInfo] | None = None,
        *,
        http_status: int | None = None,
        auth: bool = False,
    ) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.retries = list(retries or [])
        self.http_status = http_status
        self.auth = auth  # True when the endpoint rejected the key
        # docs/reference/prices.md timings of the failed call (final attempt on the wire; waits for our own limits), when measured
        self.provider_ms: float | msgspec.UnsetType = msgspec.UNSET
        self.queue_ms: float | msgspec.UnsetType = msgspec.UNSET

    @property
    def key_refused(self) -> bool:
        """The endpoint refuses the key (401, 403, or said so): no later call can succeed, so a run stops."""
        return self.auth or self.http_status in (401, 403)


class MissingKey(BadInput, AdapterError):
    """No key in the environment for a provider that needs one: one line naming the variable to set."""

    def __init__(self, provider: str, env_var: str) -> None:
        super().__init__(f"{provider}: no API key; set the environment variable {env_var}")
        self.provider = provider
        self.env_var = env_var


def key_rejected(provider: str, env_var: str | None, http_status: int | None, message: str) -> str:
    """The one line for a key the provider refused: names the provider and the variable to fix."""
    where = f"the key in {env_var}" if env_var else "the request (no key was sent)"
    code = f" (HTTP {http_status})" if http_status else ""
    return f"{provider} rejected {where}{code}: {message}"
