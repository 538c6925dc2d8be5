"""A streamed in-process answer's body read to its end, sync or async, for the seams
(`laneway.boto3`, `laneway.httpx`): the chunks, then the call's decision kept for
`laneway.last_decision()`."""

from typing import Any, AsyncIterator, Iterator

from ._context import remember
from ._router import _dispatcher


def chunks(body: Any) -> Iterator[bytes]:
    """`body`'s chunks, read without the GIL."""
    yield from body
    remember(body.decision_headers())


async def achunks(body: Any) -> AsyncIterator[bytes]:
    """`body`'s chunks, awaited on the event loop."""
    dispatcher = _dispatcher()
    while True:
        chunk = await body.next_chunk(dispatcher)
        if chunk is None:
            remember(body.decision_headers())
            return
        yield chunk
