"""Reading a big engine log fast: one `bytes.find` pass per chunk, matchers only near hits,
and on a host with cores to spare, the file cut in ranges read by parallel processes.

classify.classify_file is the entry; this module owns the bytes. A range is read in three
rotating buffers of 2 x CHUNK: a chunk that holds catalog.PRIMARY, or whose neighbour does,
is judged line by line wherever a line holds one of catalog.KEYS; the last range's last two
chunks are always judged (where an engine that exited wrote its error). Line numbers are
counted only for a verdict. Python's bytes search holds the GIL, so parallel means processes:
each runs `python -c WORKER` on its range (no fork of the caller, no re-import of its main).
Travels to the host: stdlib only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from io import FileIO
from typing import Any

CHUNK = 4 << 20  # bytes read at a time
PARALLEL_FROM = 256 << 20  # files at least this big are read by several processes
MAX_WORKERS = 4  # each holds 3 x 2 x CHUNK of buffers
MIN_CPUS = 4  # fewer: the host's engine and the rest of the job need them more

Judge = Callable[[str], object]

WORKER = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
try:
    from gpudash.serve import classify, logscan
except ImportError:
    import classify, logscan
mode, path, start, end, final, chunk = sys.argv[2], sys.argv[3], *map(int, sys.argv[4:8])
with open(path, "rb", buffering=0) as f:
    if mode == "scan":
        judge = lambda text: True if classify.judge(text) is not None else None
        hit = logscan.scan_range(f, start, end, bool(final), judge, chunk)
        print(json.dumps({"hit": hit}))
    else:
        print(json.dumps({"count": logscan.count_lines(f, start, end, chunk)}))
"""


def find_first(path: str, judge: Callable, workers: int = 0, chunk: int = 0) -> tuple | None:
    """(judge's verdict, the line, its 1-based line number) for the first line of the file
    that `judge` accepts among the candidates, or None. `workers`: 0 = as many as the file's
    size and the CPUs warrant (1 = this process only); `chunk`: bytes per read (0 = CHUNK)."""
    chunk = chunk or CHUNK
    size = os.path.getsize(path)
    if workers <= 0:
        cpus = os.cpu_count() or 1
        workers = min(MAX_WORKERS, cpus, max(1, size // (PARALLEL_FROM // 2)))
        if size < PARALLEL_FROM or cpus < MIN_CPUS:
            workers = 1
    if workers > 1:
        found = _parallel(path, size, workers, chunk)
        if found is not None:
            return _resolve(found, judge)
    with open(path, "rb", buffering=0) as f:
        hit = scan_range(f, 0, size, True, judge, chunk)
        if hit is None:
            return None
        verdict, line, offset = hit
        return verdict, line, count_lines(f, 0, offset, chunk) + 1


def _resolve(found: tuple, judge: Callable) -> tuple | None:
    """From a worker's (line, lineno) to the verdict object, judged again here."""
    if found == ():
        return None
    line, lineno = found
    verdict = judge(line)
    return None if verdict is None else (verdict, line, lineno)


def _parallel(path: str, size: int, workers: int, chunk: int) -> tuple | None:
    """() for no verdict, (line, lineno) for one; None when a worker failed (the caller then
    reads the file itself)."""
    with open(path, "rb", buffering=0) as f:
        cuts = [0, *(_line_start(f, size * i // workers) for i in range(1, workers)), size]
    # pairwise, by hand: itertools.pairwise is 3.10+ and the host may run 3.9
    ranges = [(cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1) if cuts[i + 1] > cuts[i]]
    hits = _run(
        path, [("scan", a, b, i == len(ranges) - 1) for i, (a, b) in enumerate(ranges)], chunk
    )
    if hits is None:
        return None
    for i, result in enumerate(hits):
        if result.get("hit"):
            _, line, offset = result["hit"]
            jobs = [("count", a, b, False) for a, b in ranges[:i]]
            jobs.append(("count", ranges[i][0], offset, False))
            counts = _run(path, jobs, chunk)
            if counts is None:
                return None
            return line, sum(c["count"] for c in counts) + 1
    return ()


def _run(path: str, jobs: list, chunk: int) -> list | None:
    here = os.path.dirname(os.path.abspath(__file__))
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                here,
                mode,
                path,
                str(a),
                str(b),
                str(int(final)),
                str(chunk),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        for mode, a, b, final in jobs
    ]
    results = []
    for proc in procs:
        out, _ = proc.communicate()
        try:
            results.append(json.loads(out) if proc.returncode == 0 else None)
        except ValueError:
            results.append(None)
    return None if any(r is None for r in results) else results


def _line_start(f: FileIO, offset: int) -> int:
    """The offset of the first line that starts at or after `offset` (within 1 MiB)."""
    f.seek(max(0, offset - 1))
    data = f.read(1 << 20)
    at = data.find(b"\n")
    return offset if at < 0 else max(0, offset - 1) + at + 1


def scan_range(
    f: FileIO, start: int, end: int, final: bool, judge: Callable[[bytes], Any], chunk: int
) -> list[Any] | None:
    """[verdict, line, file offset] of the first line in [start, end) that `judge` accepts,
    or None. Three buffers rotate: the chunk being read and the two before it."""
    bufs = [bytearray(2 * chunk) for _ in range(3)]
    primary, keys = _keys()
    f.seek(start)
    window: list[list[Any]] = []  # [buffer, stop, base offset, holds a key, scanned]
    pos, carry, turn = start, b"", 0
    while True:
        buf = bufs[turn]
        turn = (turn + 1) % 3
        kept = len(carry)
        buf[:kept] = carry
        want = max(0, min(chunk, end - pos))
        got = (f.readinto(memoryview(buf)[kept : kept + want]) or 0) if want else 0
        valid = kept + got
        if got == 0:  # the end of the range: what is left is one last line
            stop, carry = valid, b""
        else:
            cut = buf.rfind(b"\n", 0, valid)
            stop = cut + 1 if cut >= 0 else valid  # a line longer than a chunk is cut here
            carry = bytes(buf[stop:valid])
        base = pos - kept
        pos += got
        holds = stop > 0 and buf.find(primary, 0, stop) >= 0
        current = [buf, stop, base, holds, False]
        if got == 0:
            pieces = [*window, current]
            for k, piece in enumerate(pieces):
                near = piece[3] or (k > 0 and pieces[k - 1][3])
                near = near or (k + 1 < len(pieces) and pieces[k + 1][3])
                if not piece[4] and (final or near):
                    hit = _scan_chunk(piece[0], piece[1], keys, judge)
                    if hit is not None:
                        return [hit[0], hit[1], piece[2] + hit[2]]
            return None
        for at, piece in enumerate(window):
            if not piece[4] and (piece[3] or holds or (at > 0 and window[at - 1][3])):
                piece[4] = True
                hit = _scan_chunk(piece[0], piece[1], keys, judge)
                if hit is not None:
                    return [hit[0], hit[1], piece[2] + hit[2]]
        window = [*window[-1:], current]


def _keys() -> tuple:
    try:
        from gpudash.serve import catalog
    except ImportError:  # on the host
        import catalog  # type: ignore[no-redef, import-not-found]  # travels flat
    return catalog.PRIMARY.encode(), [k.encode() for k in catalog.KEYS]


def _scan_chunk(buf: bytearray, end: int, keys: list, judge: Callable) -> tuple | None:
    """Judge, in file order, each line of buf[:end] that holds a key: the first verdict with
    its line and the line's offset in the chunk, or None."""
    starts = set()
    for key in keys:
        at = buf.find(key, 0, end)
        while at >= 0:
            starts.add(buf.rfind(b"\n", 0, at) + 1)
            stop = buf.find(b"\n", at, end)
            if stop < 0:
                break
            at = buf.find(key, stop, end)
    for start in sorted(starts):
        stop = buf.find(b"\n", start, end)
        stop = end if stop < 0 else stop
        text = bytes(buf[start : min(stop, start + 16384)]).decode("utf-8", "replace")
        verdict = judge(text)
        if verdict is not None:
            return verdict, text, start
    return None


def count_lines(f: FileIO, start: int, end: int, chunk: int = CHUNK) -> int:
    """Newlines in [start, end) of the file."""
    buf = bytearray(chunk)
    view = memoryview(buf)
    f.seek(start)
    count, left = 0, end - start
    while left > 0:
        got = f.readinto(view[: min(chunk, left)]) or 0
        if got == 0:
            break
        count += buf.count(b"\n", 0, got)
        left -= got
    return count
