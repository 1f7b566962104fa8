"""A userspace TCP relay that adds delay and loss to a link, for kernels without `netem`.

Run as its own process (inside the host's network namespace when there is one):

    python netrelay.py CONTROL.json

CONTROL.json holds `{"gen": N, "routes": [{"listen": [addr, port], "to": [addr, port],
"delay_ms": 0, "loss_pct": 0, "cut": false, "listening": true}]}`. On SIGHUP the relay
re-reads it, opens new listeners and closes those marked `listening: false` (new connections
are then refused, open ones go on), applies the link settings to every open connection as
well as new ones, and writes `CONTROL.json.ack` containing N, so the rig waits on that
instead of sleeping.
When a listener is up it is also written to the ack (`"ready": [[addr, port], ...]`).

Model (approximate, and said so where figures are quoted):
- `delay_ms` is added round-trip time, half on each direction, applied per chunk read;
- `loss_pct` is per 1448-byte segment: a chunk with a lost segment, and everything behind it
  in that direction (TCP delivers in order), is held back one retransmission timeout,
  max(200 ms, RTT), as the kernel's RTO would;
- `cut` forwards nothing in either direction and opens no upstream for new connections:
  a silent drop, the connection stays open;
- the TCP connect itself is answered by the relay at once (the kernel completes it before
  `accept`), so the relay charges its round trip to the upstream connect instead: the
  server sees the connection, and the client the server's first bytes, one RTT later, as
  after a real handshake (within half an RTT: the client's first bytes wait too).

Standard library only: it runs under whatever python3 the machine has.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import random
import signal
import sys
from pathlib import Path

SEGMENT = 1448
MIN_RTO_S = 0.2


class Link:
    """The settings of one route, shared by all its connections and changed in place."""

    def __init__(self) -> None:
        self.delay_ms = 0.0
        self.loss_pct = 0.0
        self.cut = False
        self.changed = asyncio.Event()

    def update(self, spec: dict) -> None:
        self.delay_ms = float(spec.get("delay_ms", 0))
        self.loss_pct = float(spec.get("loss_pct", 0))
        self.cut = bool(spec.get("cut", False))
        self.changed.set()
        self.changed = asyncio.Event()

    async def open(self) -> None:
        while self.cut:
            await self.changed.wait()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, link: Link) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes | None]] = asyncio.Queue()

    async def send() -> None:
        try:
            while True:
                release, data = await queue.get()
                wait = release - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                await link.open()
                if data is None:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            return

    sender = asyncio.create_task(send())
    last = 0.0
    try:
        while True:
            try:
                data = await reader.read(65536)
            except (ConnectionError, OSError):
                data = b""
            await link.open()
            one_way = link.delay_ms / 2000
            release = max(loop.time() + one_way, last)
            if data and link.loss_pct > 0:
                segments = -(-len(data) // SEGMENT)
                keep = (1 - link.loss_pct / 100) ** segments
                if random.random() > keep:
                    release += max(MIN_RTO_S, link.delay_ms / 1000)
            last = release
            queue.put_nowait((release, data or None))
            if not data:
                break
        await sender
    finally:
        sender.cancel()


async def _serve(client_r, client_w, route: dict, link: Link) -> None:
    await link.open()
    if link.delay_ms:
        await asyncio.sleep(link.delay_ms / 1000)  # the handshake's round trip (see above)
    try:
        up_r, up_w = await asyncio.open_connection(*route["to"])
    except OSError:
        client_w.close()
        return
    try:
        await asyncio.gather(_pump(client_r, up_w, link), _pump(up_r, client_w, link))
    finally:
        for w in (client_w, up_w):
            w.close()


class Relay:
    def __init__(self, control: Path) -> None:
        self.control = control
        self.links: dict[tuple[str, int], Link] = {}
        self.servers: dict[tuple[str, int], asyncio.base_events.Server] = {}

    async def reload(self) -> None:
        spec = json.loads(self.control.read_text())
        for route in spec["routes"]:
            key = (route["listen"][0], int(route["listen"][1]))
            link = self.links.setdefault(key, Link())
            link.update(route)
            server = self.servers.get(key)
            if route.get("listening", True) and server is None:

                def handler(r, w, route=route, link=link):
                    return _serve(r, w, route, link)

                self.servers[key] = await _listen(handler, key)
            elif not route.get("listening", True) and server is not None:
                server.close()  # new connections are refused; open ones go on
                del self.servers[key]
        ready = [list(k) for k in self.servers]
        ack = self.control.with_name(self.control.name + ".ack")
        tmp = ack.with_name(ack.name + ".tmp")
        tmp.write_text(json.dumps({"gen": spec["gen"], "ready": ready, "pid": os.getpid()}))
        tmp.replace(ack)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        hup = asyncio.Event()
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGHUP, hup.set)
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        await self.reload()
        while not stop.is_set():
            waiters = [asyncio.create_task(hup.wait()), asyncio.create_task(stop.wait())]
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            for w in waiters:
                w.cancel()
            if hup.is_set():
                hup.clear()
                await self.reload()
        for server in self.servers.values():
            server.close()


async def _listen(handler, key: tuple[str, int]) -> asyncio.base_events.Server:
    """Listen on key, waiting out a listener that is still letting go of the port."""
    for _ in range(250):
        try:
            return await asyncio.start_server(handler, key[0], key[1], reuse_address=True)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            await asyncio.sleep(0.02)
    return await asyncio.start_server(handler, key[0], key[1], reuse_address=True)


if __name__ == "__main__":
    asyncio.run(Relay(Path(sys.argv[1])).run())
