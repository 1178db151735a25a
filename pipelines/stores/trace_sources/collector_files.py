"""The lines of a file the Collector's file exporter wrote: plain, gzip, or zstd in either of its
two layouts.

With `format: json` the exporter writes one ExportTraceServiceRequest a line. With `compression:
zstd` it writes, by default, each request as its own zstd frame behind a 4-byte big-endian length
and no newline (`zstd -d` cannot read that file); behind the `exporter.file.nativeCompression`
feature gate it writes an ordinary zstd stream of the JSON lines (one frame per write with rotation,
else frames cut at each flush). gzip comes from logrotate or a copy job. The layout is told by the
file's first bytes, not its name.

A file that ends inside a line, a frame or a gzip member was cut while written: its last line comes
back marked as not whole, with whatever text could still be decompressed, so its trace ids can be
read. Compressed bytes that cannot be decoded at all end the file there, reported the same way.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, NamedTuple

import zstandard

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
CHUNK = 1 << 20


class Line(NamedTuple):
    number: int
    text: bytes
    """The line without its newline; for a cut line, what could be read of it."""
    whole: bool
    """False for a line cut short: the file, frame or compressed stream ended (or broke) inside
    it."""
    problem: str = ""
    """Why a cut line is cut, when the compressed stream says more than that the file ended."""


def collector_lines(path: Path) -> Iterator[Line]:
    """Every non-empty line of the file, decompressed as its first bytes say."""
    with open(path, "rb") as handle:
        head = handle.read(8)
        handle.seek(0)
        if head.startswith(GZIP_MAGIC):
            chunks = _decompressed(handle, lambda: zlib.decompressobj(wbits=31), zlib.error)
        elif head.startswith(ZSTD_MAGIC):
            chunks = _decompressed(
                handle, lambda: zstandard.ZstdDecompressor().decompressobj(), zstandard.ZstdError
            )
        elif head[4:8] == ZSTD_MAGIC:
            yield from _length_prefixed_frames(handle)
            return
        else:
            chunks = ((block, "") for block in iter(lambda: handle.read(CHUNK), b""))
        yield from _split_lines(chunks)


def _decompressed(handle: IO[bytes], new, error: type[Exception]) -> Iterator[tuple[bytes, str]]:
    """(text, problem) chunks of a stream of gzip members or zstd frames; the problem is set once,
    at a break."""
    decompressor = new()
    started = False
    while block := handle.read(CHUNK):
        while block:
            try:
                text = decompressor.decompress(block)
            except error as exc:
                yield b"", f"compressed data broken: {exc}"
                return
            started = True
            yield text, ""
            if not decompressor.eof:
                break
            # A finished member or frame: the next one (concatenated gzip members, zstd frames per
            # write) follows.
            block, decompressor, started = decompressor.unused_data, new(), False
    if started:
        yield b"", "the compressed stream ends inside a frame"


def _split_lines(chunks: Iterator[tuple[bytes, str]]) -> Iterator[Line]:
    number, rest = 0, b""
    for text, problem in chunks:
        if problem:  # even with no text left: lines were lost
            yield Line(number + 1, rest.strip(), False, problem)
            return
        pieces = (rest + text).split(b"\n")
        rest = pieces.pop()
        for piece in pieces:
            number += 1
            if piece := piece.strip():
                yield Line(number, piece, True)
    if rest.strip():
        yield Line(
            number + 1, rest.strip(), False
        )  # no newline after it: writing stopped inside it


def _length_prefixed_frames(handle: IO[bytes]) -> Iterator[Line]:
    number = 0
    while header := handle.read(4):
        number += 1
        size = int.from_bytes(header, "big") if len(header) == 4 else -1
        frame = handle.read(size) if size >= 0 else b""
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        try:
            text = decompressor.decompress(frame)
        except zstandard.ZstdError as exc:
            yield Line(number, b"", False, f"compressed data broken: {exc}")
            return
        if size < 0 or len(frame) < size or not decompressor.eof:
            yield Line(number, text.strip(), False, "the file ends inside a frame")
            return
        if text.strip():
            yield Line(number, text.strip(), True)
