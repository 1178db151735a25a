"""Concurrent embedding requests of one event loop, coalesced into one call of the embedder at a time.

A local model pays a fixed cost per call (tokenizer, a forward pass) that dwarfs the cost per text
when a call carries a handful of texts: on 2 cores all-MiniLM-L6-v2 spends about three times the CPU
per text on calls of 4 texts as on calls of 32. Answer relevancy embeds 4 texts per item, for every
item at once; `EmbeddingBatches` sends whatever has queued while the previous call ran as the next
call (off the event loop, in a thread), so under load the calls grow by themselves and with a single
request nothing waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class EmbeddingBatches:
    """`await batches.embed(texts)`: the vectors of `texts`, computed in a call shared with the other
    requests pending at that moment. Bound to the event loop of its first request; an error of the
    shared call is raised in every request it carried."""

    def __init__(self, embed: Callable[[list[str]], list[list[float]]]):
        self._embed = embed
        self._pending: list[tuple[list[str], asyncio.Future[list[list[float]]]]] = []
        self._drain: asyncio.Task[None] | None = None

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        future: asyncio.Future[list[list[float]]] = asyncio.get_running_loop().create_future()
        self._pending.append((list(texts), future))
        if self._drain is None or self._drain.done():
            self._drain = asyncio.create_task(self._send_pending())
        return await future

    async def _send_pending(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            texts = [text for request, _ in batch for text in request]
            try:
                vectors = await asyncio.to_thread(self._embed, texts)
            except Exception as error:  # the caller turns it into its own failure reason
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                continue
            start = 0
            for request, future in batch:
                if not future.done():  # a caller that was cancelled meanwhile
                    future.set_result(vectors[start : start + len(request)])
                start += len(request)
