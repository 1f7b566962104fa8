"""The readiness ladder: port open -> GET /health 200 -> GET /v1/models -> a streamed chat.

Only the last rung is READY: SGLang's /health can answer 200 after its scheduler died
(https://github.com/sgl-project/sglang/issues/6624), and an engine whose model listing is
broken may still generate (transformers 5.17 answers 500 on /v1/models without
~/.cache/huggingface/hub, and lists the model as `PATH@main`), so /v1/models only warns.

Travels to the host with the supervisor: stdlib only (http.client), Python 3.9+.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any

HOST = "127.0.0.1"
PROMPT = "Say hello in five words."


def port_open(port: int, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:port."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def get(port: int, path: str, timeout: float = 5.0) -> tuple[int | None, str]:
    """(status, body's first 64 KiB) of GET path; (None, why) when no HTTP answer came."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Accept": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read(65536).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()


def models_check(port: int, name: str, timeout: float = 5.0) -> tuple[bool, str]:
    """(listed, note): whether /v1/models names NAME (or NAME@revision, as transformers
    lists a path). Advisory: the caller only warns when it is not listed."""
    status, body = get(port, "/v1/models", timeout)
    if status != 200:
        return False, f"/v1/models answered {status if status is not None else body}"
    try:
        data = json.loads(body).get("data") or []
        ids = [str(m.get("id")) for m in data if isinstance(m, dict)]
    except (ValueError, AttributeError):
        return False, "/v1/models answered 200 with no JSON model list"
    if any(i == name or i.split("@", 1)[0] == name for i in ids):
        return True, f"/v1/models lists {name}"
    shown = ", ".join(ids[:5]) or "nothing"
    return False, f"/v1/models lists {shown}, not {name}"


@dataclass
class Generation:
    """One streamed chat completion, as the client saw it."""

    ok: bool = False
    status: int | None = None
    error: str = ""
    content: str = ""
    deltas: int = 0  # chunks with non-empty content
    finish_reason: str | None = None
    completion_tokens: int | None = None  # from the final usage chunk, when sent
    ttft_s: float | None = None  # request sent -> first non-empty content delta
    total_s: float = 0.0
    last_s: float | None = None  # request sent -> last content delta
    lines: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        """Tokens generated: the server's own count when it sent one, else content deltas
        (OpenAI-compatible servers stream one delta per decoded token)."""
        return self.completion_tokens if self.completion_tokens else self.deltas

    @property
    def decode_tok_s(self) -> float | None:
        """Tokens after the first over the time after the first: decode speed without the
        prefill that TTFT already measures."""
        if self.ttft_s is None or self.last_s is None or self.tokens < 2:
            return None
        span = self.last_s - self.ttft_s
        return (self.tokens - 1) / span if span > 0 else None


def chat(port: int, model: str, max_tokens: int, timeout: float = 300.0) -> Generation:
    """A streamed POST /v1/chat/completions (temperature 0): ok when at least one non-empty
    content delta and a finish_reason arrived."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
    }
    out = Generation()
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    started = time.monotonic()
    try:
        conn.request(
            "POST",
            "/v1/chat/completions",
            body=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
        )
        resp = conn.getresponse()
        out.status = resp.status
        if resp.status != 200:
            out.error = f"HTTP {resp.status}: {_one_line(resp.read(2048))}"
            return out
        while True:
            raw = resp.readline(1 << 20)
            if not raw:
                break
            _event(out, raw.decode("utf-8", "replace").strip(), time.monotonic() - started)
            if out.lines and out.lines[-1] == "[DONE]":
                break
    except (OSError, http.client.HTTPException) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
    finally:
        out.total_s = time.monotonic() - started
        conn.close()
    if not out.error:
        if not out.deltas:
            out.error = "the stream carried no content"
        elif out.finish_reason is None:
            out.error = "the stream ended without a finish_reason"
    out.ok = not out.error
    return out


def _event(out: Generation, line: str, at: float) -> None:
    if not line.startswith("data:"):
        return
    data = line[5:].strip()
    if data == "[DONE]":
        out.lines.append(data)
        return
    try:
        chunk: dict[str, Any] = json.loads(data)
    except ValueError:
        return
    if not isinstance(chunk, dict):
        return
    if isinstance(chunk.get("error"), (dict, str)):
        out.error = "error in the stream: " + _one_line(json.dumps(chunk["error"])[:300])
    usage = chunk.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        out.completion_tokens = usage["completion_tokens"]
    for choice in chunk.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta") or {}
        text = delta.get("content") if isinstance(delta, dict) else None
        if isinstance(text, str) and text:
            out.deltas += 1
            out.content += text
            if out.ttft_s is None:
                out.ttft_s = at
            out.last_s = at
        if choice.get("finish_reason"):
            out.finish_reason = str(choice["finish_reason"])


def _one_line(data: bytes | str) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
    return " ".join(text.split())[:300]


class Backoff:
    """Poll intervals that grow from `first` to `cap` (x1.5 each), reset on progress: a
    quiet wait costs a few wake-ups a second at most, never a busy loop."""

    def __init__(self, first: float = 0.1, cap: float = 1.0) -> None:
        self.first, self.cap, self.now = first, cap, first

    def next(self) -> float:
        delay, self.now = self.now, min(self.cap, self.now * 1.5)
        return delay

    def reset(self) -> None:
        self.now = self.first
