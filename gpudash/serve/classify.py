"""Why an engine failed to start, judged from its whole log: the first root cause wins.

The last error of a failed vLLM start points back ("Engine core initialization failed. See root
cause above."), and an SGLang scheduler's traceback is followed by its parent's "Received
sigquit": so the verdict is the FIRST line that matches a known signature (catalog.py), quoted
with its line number. `first_error` keeps the first line that reads as a real error, for a
failure no signature knows (the supervisor's serve.exited).

Total and linear: any text is accepted, lines are cut to `MAX_LINE` before matching, and
`classify_file` reads a log of any size in fixed chunks. A pure-Python loop over every line
of a 1 GB log takes minutes, so the file path finds candidate lines with `bytes.find` on a few
literals (catalog.KEYS) and runs the matchers only on those. Travels to the host: stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

try:
    from gpudash.serve import catalog
except ImportError:  # on the host: the job's files/ folder is on sys.path
    import catalog  # type: ignore[no-redef]

CATALOG = catalog.SIGNATURES  # every signature, each with the public report it was read in
MAX_LINE = 4096  # characters of a line the matchers look at
MAX_QUOTE = 400  # characters of a line a verdict quotes
CHUNK = 4 << 20  # bytes classify_file reads at a time
HEAD = 256  # characters of a line its prefixes and exception name are looked for in

# Escape sequences and control characters (the quote is shown on terminals and panels).
_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]"
)
# Prefixes engines put before a message: "(EngineCore_DP0 pid=1) ", "ERROR 03-05 09:56:09
# [core.py:1100] ", "[2025-03-11 15:02:53 TP0] ", "[rank0]: ", "vllm-1  | ", "2025-...Z ".
_PREFIX = re.compile(
    r"^(?:\s*(?:\([\w.-]+ pid=\d+(?:, ip=[\d.]+)?\)"
    r"|(?:ERROR|INFO|WARNING|DEBUG|CRITICAL) \d\d-\d\d [\d:]+ \[[^\]]*\]"
    r"|\[\d{4}-\d\d-\d\d [\d:]+(?: [A-Z]+\d+)*\]"
    r"|\[rank\d+\]:"
    r"|[\w.-]+-\d+\s+\|"
    r"|\[?\d{4}-\d\d-\d\dT[\d:.]+Z\]?"
    r"|\d{4}-\d\d-\d\d [\d:.]+ \|"
    r"|ERROR:|INFO:))+\s*"
)
# A traceback's last line at the start of a message: "ValueError: ...", "Exception: ...",
# "torch.OutOfMemoryError: ...", "huggingface_hub.errors.CacheNotFound: ..." (any class a
# module path names).
_ERROR_HEAD = re.compile(
    r"(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception)|Exception)\b:"
    r"|(?:[a-z_][a-z0-9_]*\.)+[A-Z][A-Za-z0-9]*:"
)
# Wrappers that point elsewhere: never a root cause, never the first real error.
_WRAPPERS = (
    "See root cause above",
    "See stack trace",
    "for the root cause",
    "initialization failed due to an exception in a background process",
    "EngineDeadError",
    "Engine core initialization failed",
)


@dataclass(frozen=True)
class Failure:
    """The verdict on a failed start: the code, the log line it was judged from, and help."""

    code: str
    line: str  # the quoted log line, cleaned of control characters, at most MAX_QUOTE
    lineno: int  # 1-based line number in the log
    why: str
    fix: str
    source: str  # the public report this wording was seen in


def clean_line(text: str) -> str:
    """One log line safe to show: escapes dropped, control and bidi characters removed,
    surrounding space trimmed, cut to MAX_QUOTE characters."""
    text = _CONTROL.sub("", _ESCAPE.sub("", text[: MAX_LINE * 2]))
    text = text.strip()
    return text if len(text) <= MAX_QUOTE else text[: MAX_QUOTE - 1] + "…"


def message(line: str) -> str:
    """The message of a log line without the engine's prefixes (pid, level, time, rank)."""
    m = _PREFIX.match(line[:HEAD])  # prefixes are short: a hostile line costs HEAD at most
    return line[m.end() :] if m else line.lstrip()


def _is_code(body: str) -> bool:
    """A traceback's source line (`raise ValueError(...)`, `File "..."`): it repeats the
    message that follows it, so the verdict quotes the exception line instead."""
    return body.startswith(("raise ", 'File "', "warnings.warn(", "^", "~"))


def judge(line: str) -> catalog.Signature | None:
    """The signature a single line matches, or None. Pure; looks at MAX_LINE characters."""
    line = line[:MAX_LINE]
    for first, sig in _FIRST:
        if first in line and all(needle in line for needle in sig.needles):
            break
    else:
        return None
    body = message(line)
    if _is_code(body) or any(w in body for w in _WRAPPERS):
        return None
    for first, sig in _FIRST:
        if first in body and all(needle in body for needle in sig.needles):
            return sig
    return None


_FIRST = tuple((sig.needles[0], sig) for sig in catalog.SIGNATURES)


def is_error(line: str) -> bool:
    """Whether a line reads as a real error (an exception's message, not a wrapper)."""
    body = message(line[:MAX_LINE])
    if _is_code(body) or any(w in body for w in _WRAPPERS):
        return False
    return _ERROR_HEAD.match(body[:HEAD]) is not None


def failure(sig: catalog.Signature, line: str, lineno: int) -> Failure:
    why, fix = catalog.CODES[sig.code]
    return Failure(sig.code, clean_line(line), lineno, sig.why or why, fix, sig.source)


class Classifier:
    """Feed an engine's log line by line; `result()` is the first root cause seen so far."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.lineno = 0
        self._result: Failure | None = None
        self._first_error: str | None = None

    def feed(self, line: str) -> None:
        """One line of the log (bytes are decoded; anything else is taken as its str)."""
        self.lineno += 1
        if not isinstance(line, str):
            line = line.decode("utf-8", "replace") if isinstance(line, bytes) else str(line)
        self._see(line, self.lineno)

    def _see(self, line: str, lineno: int) -> None:
        if self._result is not None:
            return
        if self._first_error is None and is_error(line):
            self._first_error = clean_line(line)
        sig = judge(line)
        if sig is not None:
            self._result = failure(sig, line, lineno)

    def result(self) -> Failure | None:
        """The first line matching a known signature (the root cause), or None."""
        return self._result

    def first_error(self) -> str | None:
        """The first line that reads as a real error (cleaned), or None."""
        return self._first_error


def stall_cause(last_lines: list, last_lineno: int = 0) -> Failure | None:
    """What a stalled start was waiting on, where the log says: a FlashInfer JIT load among
    the last three lines is the lock of a killed run (flashinfer#972). `last_lines` is the
    log's tail; `last_lineno` the number of its last line (0: unknown, and so is the verdict's).
    """
    tail = [line for line in last_lines[-3:] if isinstance(line, str)]
    for back, line in enumerate(reversed(tail)):
        if catalog.JIT_LOCK_LINE in line and "flashinfer" in line:
            why = "the start hangs in a FlashInfer JIT load: a lock left by a killed run"
            fix = "stop other engines, remove ~/.cache/flashinfer (its lock and partial build)"
            lineno = max(0, last_lineno - back) if last_lineno else 0
            return Failure("serve.jit", clean_line(line), lineno, why, fix, catalog.JIT_LOCK_SOURCE)
    return None


def classify_file(path: str, engine: str) -> Failure | None:
    """Classify a log file of any size in bounded memory (three buffers of 2 x CHUNK): the first
    line matching a signature, with its line number; None when none matches or the file
    cannot be read.

    Every chunk is searched for catalog.PRIMARY; a chunk that holds it, whose neighbour
    does, or one of the last two (where an engine that exited wrote its error) is searched
    for every key, and only the lines holding one are judged. A line that holds no PRIMARY, in
    a chunk away from both, is not looked at: the price of reading a healthy 1 GB log once.
    `engine` is accepted for the contract; the signatures hold for every engine.
    """
    primary = catalog.PRIMARY.encode()
    keys = [k.encode() for k in catalog.KEYS]
    try:
        with open(path, "rb", buffering=0) as f:
            hit = _scan_file(f, primary, keys)
            if hit is None:
                return None
            sig, line, offset = hit
            f.seek(0)
            return failure(sig, line, _count_lines(f, offset) + 1)
    except OSError:
        return None


def _scan_file(f, primary: bytes, keys: list) -> tuple | None:
    """(signature, line, file offset of the line) of the first verdict, or None.

    Three buffers rotate: the chunk being read and the two before it, so that the last two
    chunks of the file are always judged in full (a failure's lines straddle a chunk end)."""
    bufs = [bytearray(2 * CHUNK) for _ in range(3)]
    carry = b""
    base = 0
    window: list = []  # up to two chunks before: [buffer, end, file offset, holds, judged]
    turn = 0
    while True:
        buf = bufs[turn]
        turn = (turn + 1) % 3
        kept = len(carry)
        buf[:kept] = carry
        got = f.readinto(memoryview(buf)[kept : kept + CHUNK]) or 0
        valid = kept + got
        if got == 0:  # the end: what is left is one last line without a newline
            end, carry = valid, b""
        else:
            cut = buf.rfind(b"\n", 0, valid)
            end = cut + 1 if cut >= 0 else valid  # a line longer than CHUNK is cut here
            carry = bytes(buf[end:valid])
        holds = end > 0 and buf.find(primary, 0, end) >= 0
        if got == 0:
            for chunk in [*window, [buf, end, base, holds, False]]:
                if not chunk[4]:
                    hit = _scan_chunk(chunk[0], chunk[1], keys)
                    if hit is not None:
                        return hit[0], hit[1], chunk[2] + hit[2]
            return None
        for at, chunk in enumerate(window):
            near = chunk[3] or holds or (at > 0 and window[at - 1][3])
            if not chunk[4] and near:
                chunk[4] = True
                hit = _scan_chunk(chunk[0], chunk[1], keys)
                if hit is not None:
                    return hit[0], hit[1], chunk[2] + hit[2]
        window = [*window[-1:], [buf, end, base, holds, False]]
        base += end


def _scan_chunk(buf: bytearray, end: int, keys: list) -> tuple | None:
    """Judge, in file order, each line of buf[:end] that holds a key: the first signature
    with its line and the line's offset in the chunk, or None."""
    starts = set()
    for key in keys:
        pos = buf.find(key, 0, end)
        while pos >= 0:
            starts.add(buf.rfind(b"\n", 0, pos) + 1)
            stop = buf.find(b"\n", pos, end)
            if stop < 0:
                break
            pos = buf.find(key, stop, end)
    for start in sorted(starts):
        stop = buf.find(b"\n", start, end)
        stop = end if stop < 0 else stop
        text = bytes(buf[start : min(stop, start + MAX_LINE * 4)]).decode("utf-8", "replace")
        sig = judge(text)
        if sig is not None:
            return sig, text, start
    return None


def _count_lines(f, offset: int) -> int:
    """Newlines before `offset`: counted only once a verdict is found, so a healthy log is
    read once."""
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    count = 0
    left = offset
    while left > 0:
        got = f.readinto(view[: min(CHUNK, left)]) or 0
        if got == 0:
            break
        count += buf.count(b"\n", 0, got)
        left -= got
    return count
