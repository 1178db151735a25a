"""An OTLP/HTTP endpoint that writes what it receives as the Collector's file exporter does: one
OTLP/JSON request a line. The apps of the tests export to it with the real OTLP/HTTP exporters, so
what ragwatch reads is what a Collector in front of them would have written."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from pipelines.stores.trace_sources.otlp_file_exporter import request_json

SIGNALS = {
    "/v1/traces": ("traces", ExportTraceServiceRequest),
    "/v1/logs": ("logs", ExportLogsServiceRequest),
}


@contextmanager
def otlp_receiver(folder: Path) -> Iterator[str]:
    """Serve until the block ends; each signal is appended to `folder`/<signal>.jsonl. Yields the
    endpoint's base URL (what OTEL_EXPORTER_OTLP_ENDPOINT names)."""
    folder.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path not in SIGNALS:
                self.send_error(404)
                return
            signal, message_type = SIGNALS[self.path]
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            request = message_type()
            if self.headers.get("Content-Type") == "application/json":
                from google.protobuf.json_format import Parse

                Parse(body, request)
            else:
                request.ParseFromString(body)
            line = orjson.dumps(request_json(request)) + b"\n"
            with lock, open(folder / f"{signal}.jsonl", "ab") as out:
                out.write(line)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:  # the test's output is for failures
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
