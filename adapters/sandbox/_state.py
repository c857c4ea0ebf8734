"""What every sandbox route shares: the Sandbox of its app (world, fault plan, counters) and the request's body."""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec
from starlette.requests import Request
from starlette.responses import Response

from searchtrace.adapters._types import TRACE_HEADER
from searchtrace.adapters.sandbox._faults import Attempts, FaultPlan, choose
from searchtrace.adapters.sandbox._personas import WorldShelf
from searchtrace.adapters.sandbox._responses import Hang, fault_reply, mangle, quota_reply
from searchtrace.adapters.sandbox._world import World

SLOW_S = 0.25
RESPONSES_KEPT = 1024  # stored Responses conversations per server (oldest dropped): what `previous_response_id` finds


class Sandbox:
    """Shared state of one app: the world, fault plan, attempt and request counters."""

    def __init__(self, world: World, faults: FaultPlan | None, hang_s: float, batch_delay_s: float = 0.0) -> None:
        self.world = world
        self.batch_delay_s = batch_delay_s  # how long a model batch stays in progress (docs/how-to/batch.md)
        self.batches: Any = None  # the model batches and files (_batch_route.Batches), made on first use
        self.shelf = WorldShelf(world)
        self.faults = faults
        self.hang_s = hang_s
        self.attempts = Attempts()
        self.counters: Counter[tuple[str, str | None]] = Counter()
        self.totals: Counter[str] = Counter()
        self.conversations: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()

    def keep(self, response_id: str, messages: list[dict[str, Any]]) -> None:
        """Stores a response's conversation (chat messages, without its instructions) for `previous_response_id`."""
        self.conversations[response_id] = messages
        self.conversations.move_to_end(response_id)
        while len(self.conversations) > RESPONSES_KEPT:
            self.conversations.popitem(last=False)

    def conversation(self, response_id: str) -> list[dict[str, Any]] | None:
        """The conversation up to and including a stored response, or None when it is unknown or dropped."""
        found = self.conversations.get(response_id)
        return None if found is None else list(found)

    def count(self, route: str, request: Request) -> None:
        self.counters[(route, request.headers.get(TRACE_HEADER))] += 1
        self.totals[route] += 1

    def fault(self, route: str, key: str, marker_text: str) -> str | None:
        """The fault for this request (the attempt number is counted here)."""
        attempt = self.attempts.next(route, key)
        return choose(route, key, attempt, marker_text, self.faults)

    async def run(self, route: str, kind: str | None, key: str, produce: Callable[[], Awaitable[Response]]) -> Response:
        """Applies a fault kind around `produce()` (an async callable returning a Response)."""
        if kind in ("429", "500", "503", "401"):
            return fault_reply(route, kind, key)
        if kind == "quota":
            return quota_reply(route, key)
        if kind == "timeout":
            return Hang(self.hang_s)
        if kind == "slow":
            await anyio.sleep(SLOW_S)
        response = await produce()
        if kind in ("malformed", "truncated") and response.status_code == 200 and hasattr(response, "body"):
            return mangle(response, kind)
        return response


async def json_body(request: Request) -> dict[str, Any] | None:
    """The request's JSON object body; None when it does not parse or is not an object."""
    try:
        body = msgspec.json.decode(await request.body())
    except (msgspec.DecodeError, RecursionError):  # not JSON, or nested deeper than the decoder follows
        return None
    return body if isinstance(body, dict) else None


def sandbox_of(request: Request) -> Sandbox:
    sb = request.app.state.sandbox
    assert isinstance(sb, Sandbox)
    return sb
