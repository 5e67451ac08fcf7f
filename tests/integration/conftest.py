"""Fixtures the integration tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.conftest import TestDatabase
from tests.integration.helpers import Listener, listening


@pytest.fixture
async def listener(test_database: TestDatabase) -> AsyncIterator[Listener]:
    """A Listener on the test database's hint channel, for the whole test."""
    async with listening(test_database) as collector:
        yield collector
