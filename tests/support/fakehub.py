"""A Hugging Face Hub on loopback: the few endpoints `hf download` and `HfApi.model_info` use.

The model task runs the real `hf` CLI (huggingface_hub, a test dependency) with HF_ENDPOINT
pointed here, so the download, the size check before it and the token handling are the real
client's; only the server is small. It serves one repo at one commit and records every
request with the Authorization header it carried.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from tests.support.loopback_http import QuietHandler, serving

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class FakeHub:
    repo: str
    files: Mapping[str, bytes]
    claimed_sizes: Mapping[str, int] = field(default_factory=dict)
    """Sizes the API reports instead of the real ones (a repo too big for the disk)."""
    url: str = ""
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)
    """(method, path, Authorization header) per request."""

    def size(self, name: str) -> int:
        return self.claimed_sizes.get(name, len(self.files[name]))

    def answer(self, path: str) -> tuple[int, bytes, dict[str, str]]:
        api = f"/api/models/{self.repo}"
        if path.startswith(f"{api}/tree/"):
            tree = [
                {"type": "file", "path": name, "size": self.size(name), "oid": _oid(data)}
                for name, data in self.files.items()
            ]
            return 200, json.dumps(tree).encode(), {"Content-Type": "application/json"}
        if path == api or path.startswith(f"{api}/revision/"):
            siblings = [
                {"rfilename": name, "size": self.size(name), "blobId": _oid(data)}
                for name, data in self.files.items()
            ]
            info = {"id": self.repo, "modelId": self.repo, "sha": COMMIT, "siblings": siblings}
            return 200, json.dumps(info).encode(), {"Content-Type": "application/json"}
        resolve = f"/{self.repo}/resolve/"
        if path.startswith(resolve):
            _, _, name = path[len(resolve) :].partition("/")
            if name in self.files:
                data = self.files[name]
                return 200, data, {"X-Repo-Commit": COMMIT, "ETag": f'"{_oid(data)}"'}
        return 404, b'{"error": "not found"}', {"X-Error-Code": "EntryNotFound"}


def _oid(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


@contextmanager
def fake_hub(
    repo: str, files: Mapping[str, bytes], claimed_sizes: Mapping[str, int] | None = None
) -> Iterator[FakeHub]:
    hub = FakeHub(repo, files, claimed_sizes or {})

    class Handler(QuietHandler):
        def do_HEAD(self) -> None:
            self._reply()

        def do_GET(self) -> None:
            self._reply()

        def _reply(self) -> None:
            path = unquote(urlparse(self.path).path)
            hub.requests.append((self.command, path, self.headers.get("Authorization")))
            code, body, headers = hub.answer(path)
            self.send_response(code)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

    with serving(Handler) as port:
        hub.url = f"http://127.0.0.1:{port}"
        yield hub
