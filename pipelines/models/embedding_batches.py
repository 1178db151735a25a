"""Concurrent embedding requests of one event loop, coalesced into one call of the embedder at a
time.

A local model pays a fixed cost per call (tokenizer, a forward pass) that dwarfs the cost per text
when a call carries a handful of texts: on 2 cores all-MiniLM-L6-v2 spends about three times the CPU
per text on calls of 4 texts as on calls of 32. Answer relevancy embeds 4 texts per item, for every
item at once; `EmbeddingBatches` sends whatever has queued while the previous call ran as the next
call (off the event loop, in a thread of lower priority), so under load the calls grow by themselves
and with a single request nothing waits.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

EMBEDDING_NICENESS = 10
"""Nice value of the thread that embeds. Its work is off the critical path (items wait on the model
server for most of their time) but costs whole seconds of CPU, and on a small machine it competes
with the event loop that reads replies and sends the next requests: `ragwatch bench eval` on 2 cores
reaches 90-91 % efficiency with it yielding, 89-90 % without. A thread the loop starves still gets
its share."""
_background: ThreadPoolExecutor | None = None
_background_lock = threading.Lock()


def _lower_priority() -> None:
    # Linux schedules each thread by its own nice value (elsewhere it would apply to the whole
    # process); threads this one starts inherit it, a pool the model started earlier from another
    # thread does not.
    if sys.platform == "linux":
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), EMBEDDING_NICENESS)


def _background_thread() -> ThreadPoolExecutor:
    """One thread for every `EmbeddingBatches` of the process: the calls are CPU-bound and
    serialised anyway."""
    global _background
    with _background_lock:
        if _background is None:
            _background = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="embedding-batches", initializer=_lower_priority
            )
        return _background


def _forget_background_thread() -> None:
    global _background
    _background = None  # a forked child has the executor but not its thread: it starts its own


os.register_at_fork(after_in_child=_forget_background_thread)


class EmbeddingBatches:
    """`await batches.embed(texts)`: the vectors of `texts`, computed in a call shared with the
    other requests pending at that moment. Bound to the event loop of its first request; an error of
    the shared call is raised in every request it carried."""

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
                vectors = await asyncio.get_running_loop().run_in_executor(
                    _background_thread(), self._embed, texts
                )
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
