"""The fake SGLang / vLLM / transformers server that make_fake_venv installs (stdlib only).

It is run as `python -m sglang.launch_server ...`, `vllm serve ...` or `transformers serve ...`
from a fake venv, takes the arguments the real engines take, replays a recorded engine log
(the port and model it names replaced by the ones given), then per its mode:
  ok          listens on the port for real: GET /health, GET /v1/models, POST
              /v1/chat/completions (streamed as SSE chunks like sglang/vllm, or whole)
  no_generate /health and /v1/models answer, chat completions fail with 500 (sglang#6624)
  exit        exits 1 after the log
  hang        stops printing and sleeps (for the stall watchdog)
A port already taken gets the engine's own error line and exit 1. In ok, no_generate and hang
it keeps a child process (an "engine core") in its process group, as the real engines do.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CONFIG = Path(__file__).with_name("fake_engine.json")
TEXT = (
    "The quick brown fox jumps over the lazy dog while the GPUs hum along in the rack and the"
    " fake engine streams one word at a time so that a client can measure its first token and"
    " its decode rate without a GPU in sight ."
)
WORDS = tuple(TEXT.split())
LISTEN_LINES = ("Started server process", "Uvicorn running on", "Application startup complete")
PORT_IN_USE = {
    # Uvicorn's bind error (vllm-project/vllm#7514) and vLLM's own socket bind (#9763).
    "sglang": "ERROR:    [Errno 98] error while attempting to bind on address ('{host}', {port}): "
    "address already in use",
    "vllm": "OSError: [Errno 98] Address already in use",
    "transformers": "ERROR:    [Errno 98] error while attempting to bind on address "
    "('{host}', {port}): address already in use",
}


def parse(engine: str, argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=engine)
    if engine == "sglang":
        p.add_argument("--model-path", required=True)
        p.add_argument("--tp", "--tp-size", dest="tp", type=int, default=1)
        p.add_argument("--served-model-name", default=None)
        p.add_argument("--port", type=int, default=30000)
    else:
        p.add_argument("command", choices=["serve"])
        p.add_argument("model_path")
        p.add_argument("--tensor-parallel-size", "-tp", dest="tp", type=int, default=1)
        p.add_argument("--served-model-name", default=None)
        p.add_argument("--port", type=int, default=8000)
        p.add_argument("--device", default="cpu")
    p.add_argument("--host", default="127.0.0.1")
    args, _ = p.parse_known_args(argv)
    args.name = args.served_model_name or args.model_path
    return args


def sidecar(log: Path) -> dict[str, str]:
    side = log.with_suffix(".source")
    if not side.exists():
        return {}
    rows = (r.partition(": ") for r in side.read_text().splitlines())
    return {k: v for k, _, v in rows}


def rewrite(line: str, meta: dict[str, str], args: argparse.Namespace) -> str:
    if meta.get("model"):
        line = line.replace(meta["model"], args.model_path)
    if meta.get("port"):
        line = re.sub(rf"(?<![\d.]){re.escape(meta['port'])}(?!\d)", str(args.port), line)
    return re.sub(
        r"(Uvicorn running on https?://)[^\s:]+:\d+", rf"\g<1>{args.host}:{args.port}", line
    )


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def engine_core() -> subprocess.Popen:
    """A child in our process group, as sglang's scheduler and vLLM's EngineCore are."""
    return subprocess.Popen(
        [sys.executable, "-c", "import time\nwhile True: time.sleep(60)"],
        stdin=subprocess.DEVNULL,
    )


def bind(engine: str, args: argparse.Namespace) -> ThreadingHTTPServer:
    try:
        server = ThreadingHTTPServer((args.host, args.port), make_handler(engine, args))
    except OSError:
        say(PORT_IN_USE[engine].format(host=args.host, port=args.port))
        sys.exit(1)
    return server


def main(argv: list[str]) -> None:
    engine = argv[0]
    args = parse(engine, argv[1:])
    config = json.loads(CONFIG.read_text())
    mode, speed = config["serve"], float(config["speed"])
    log = Path(config["log"])
    meta = sidecar(log)
    args.mode = mode
    child = engine_core() if mode in ("ok", "no_generate", "hang") else None
    server = None
    try:
        for raw in log.read_text(errors="replace").splitlines():
            if (
                mode in ("ok", "no_generate")
                and server is None
                and any(m in raw for m in LISTEN_LINES)
            ):
                server = bind(engine, args)
            say(rewrite(raw, meta, args))
            if speed > 0:
                time.sleep(1.0 / speed)
        if mode == "exit":
            sys.exit(1)
        if mode == "hang":
            while True:
                time.sleep(60)
        if server is None:
            server = bind(engine, args)
            url = f"http://{args.host}:{args.port}"
            say(f"INFO:     Uvicorn running on {url} (Press CTRL+C to quit)")
        server.serve_forever()
    finally:
        if child is not None:
            child.kill()


def make_handler(engine: str, args: argparse.Namespace) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *rest: object) -> None:
            pass

        def access(self, code: int) -> None:
            host, port = self.client_address[:2]
            say(f'INFO:     {host}:{port} - "{self.command} {self.path} HTTP/1.1" {code}')

        def reply(self, code: int, body: object, kind: str = "application/json") -> None:
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.access(code)

        def do_GET(self) -> None:
            if self.path == "/health":
                self.reply(200, None)
            elif self.path == "/v1/models":
                model = {"id": args.name, "object": "model", "created": 0, "owned_by": engine}
                self.reply(200, {"object": "list", "data": [model]})
            else:
                self.reply(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            if self.path != "/v1/chat/completions":
                self.reply(404, {"detail": "Not Found"})
                return
            try:
                size = int(self.headers.get("Content-Length") or 0)
                req = json.loads(self.rfile.read(size) or b"{}")
                assert isinstance(req, dict) and isinstance(req.get("messages"), list)
            except (ValueError, AssertionError):
                self.reply(400, {"error": {"message": "bad request", "code": 400}})
                return
            if req.get("model", args.name) != args.name:
                msg = f"The model `{req.get('model')}` does not exist."
                self.reply(404, {"error": {"message": msg, "type": "NotFoundError", "code": 404}})
                return
            if args.mode == "no_generate":
                msg = "The scheduler is not responding (fake engine: no_generate)"
                self.reply(500, {"error": {"message": msg, "code": 500}})
                return
            limit = max(1, int(req.get("max_tokens") or 16))
            words = [(" " if i else "") + w for i, w in enumerate(WORDS[:limit])]
            finish = "length" if limit < len(WORDS) else "stop"
            if req.get("stream"):
                self.stream(
                    words, finish, bool((req.get("stream_options") or {}).get("include_usage"))
                )
            else:
                message = {"role": "assistant", "content": "".join(words)}
                usage = {
                    "prompt_tokens": 8,
                    "completion_tokens": len(words),
                    "total_tokens": 8 + len(words),
                }
                self.reply(
                    200,
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": args.name,
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": usage,
                    },
                )

        def stream(self, words: list[str], finish: str, usage: bool) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.access(200)

            def chunk(delta: dict, reason: object = None, **extra: object) -> None:
                body = {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": args.name,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
                }
                body.update(extra)
                self.wfile.write(b"data: " + json.dumps(body).encode() + b"\n\n")
                self.wfile.flush()

            try:
                chunk({"role": "assistant", "content": ""})
                for word in words:
                    time.sleep(0.002)
                    chunk({"content": word})
                chunk({}, finish)
                if usage:
                    chunk(
                        {},
                        None,
                        usage={
                            "prompt_tokens": 8,
                            "completion_tokens": len(words),
                            "total_tokens": 8 + len(words),
                        },
                    )
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except OSError:
                pass

    return Handler


if __name__ == "__main__":
    main(sys.argv[1:])
