"""The fan-in every probe round runs through: arrival order, and what an error does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from gpudash.aio import merge


async def failing() -> AsyncIterator[str]:
    yield "first"
    await asyncio.sleep(0.01)
    raise ValueError("the host went away")


async def endless(cancelled: list[bool]) -> AsyncIterator[str]:
    try:
        while True:
            await asyncio.sleep(0.005)
            yield "tick"
    except asyncio.CancelledError:
        cancelled.append(True)
        raise


async def test_a_failing_stream_costs_only_itself_by_default() -> None:
    async def two() -> AsyncIterator[str]:
        await asyncio.sleep(0.05)
        yield "second"

    assert [x async for x in merge([failing(), two()])] == ["first", "second"]


async def test_with_reraise_the_first_error_ends_the_merge_and_stops_the_rest() -> None:
    cancelled: list[bool] = []
    seen = []
    with pytest.raises(ValueError, match="went away"):
        async for item in merge([failing(), endless(cancelled)], reraise=True):
            seen.append(item)
    assert "first" in seen
    assert cancelled == [True]
