"""Shared fixtures: anyio runs on asyncio (aiohttp needs it)."""

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
