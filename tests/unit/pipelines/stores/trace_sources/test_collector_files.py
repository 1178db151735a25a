"""Collector files as the file exporter writes them, plain and compressed, whole and cut while
written."""

from __future__ import annotations

import gzip
import json
import random
import subprocess

import pytest
import zstandard

from pipelines.stores.trace_sources.collector_files import collector_lines
from ragwatch_harness.bench.otlp_day import trace_spans


def requests(n: int = 3) -> list[bytes]:
    rng = random.Random(3)
    return [
        json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": trace_spans(i, rng)}]}]}).encode()
        for i in range(n)
    ]


def plain(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def gzip_members(lines: list[bytes]) -> bytes:
    """Two gzip members, as `cat a.gz b.gz` or a logrotate append leaves them."""
    return gzip.compress(plain(lines[:1])) + gzip.compress(plain(lines[1:]))


def zstd_native(lines: list[bytes]) -> bytes:
    """`exporter.file.nativeCompression` with rotation: each write (the JSON, then its newline) is
    one frame."""
    compressor = zstandard.ZstdCompressor()
    return b"".join(compressor.compress(line) + compressor.compress(b"\n") for line in lines)


def zstd_length_prefixed(lines: list[bytes]) -> bytes:
    """The default `compression: zstd`: each request one frame behind its 4-byte big-endian length,
    no newline."""
    compressor = zstandard.ZstdCompressor()
    frames = [compressor.compress(line) for line in lines]
    return b"".join(len(frame).to_bytes(4, "big") + frame for frame in frames)


LAYOUTS = {
    "plain": plain,
    "gzip": gzip_members,
    "zstd": zstd_native,
    "zstd-length-prefixed": zstd_length_prefixed,
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_gives_back_the_requests(tmp_path, layout):
    lines = requests()
    path = tmp_path / "traces.jsonl"
    path.write_bytes(LAYOUTS[layout](lines))
    read = list(collector_lines(path))
    assert [line.text for line in read] == lines and all(line.whole for line in read)


def test_the_native_zstd_layout_is_a_standard_zstd_stream(tmp_path):
    path = tmp_path / "traces.jsonl.zst"
    path.write_bytes(zstd_native(requests()))
    assert subprocess.run(
        ["zstd", "-dc", str(path)], capture_output=True, check=True
    ).stdout == plain(requests())


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_file_cut_while_written_ends_with_its_cut_line_not_an_error(tmp_path, layout):
    lines = requests(4)
    data = LAYOUTS[layout](lines)
    path = tmp_path / "traces.jsonl"
    path.write_bytes(data[: int(len(data) * 0.55)])
    read = list(collector_lines(path))
    *whole, cut = read
    assert (
        all(line.whole for line in whole) and [line.text for line in whole] == lines[: len(whole)]
    )
    assert not cut.whole and lines[len(whole)].startswith(
        cut.text
    )  # what could be read of the cut request
    if layout != "plain":
        assert cut.problem  # the compressed stream itself says it was cut


def test_compressed_bytes_that_cannot_be_decoded_end_the_file_as_a_cut_line(tmp_path):
    data = bytearray(gzip_members(requests()))
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    path = tmp_path / "traces.jsonl.gz"
    path.write_bytes(bytes(data))
    *_, last = collector_lines(path)
    assert not last.whole and last.problem
