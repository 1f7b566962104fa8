"""An HTTP server on 127.0.0.1 for the length of a `with` block (package indexes, a Hub)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def serving(handler: Callable[..., BaseHTTPRequestHandler]) -> Iterator[int]:
    """Serve `handler` on a free loopback port (yielded) in a thread; stop it after."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class QuietHandler(BaseHTTPRequestHandler):
    """No access log on the test's stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        pass
