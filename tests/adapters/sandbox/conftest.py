"""The sandbox tests' `client`: httpx over a fresh sandbox app in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.adapters.sandbox.harness import app_client


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with app_client() as c:
        yield c
