"""Why an engine failed to start, judged from its whole log: the first root cause wins.

The last error of a failed vLLM start points back ("Engine core initialization failed. See root
cause above."), and an SGLang scheduler's traceback is followed by its parent's "Received
sigquit": so the verdict is the FIRST line that matches a known signature (catalog.py), quoted
with its line number. `first_error` keeps the first line that reads as a real error, for a
failure no signature knows (the supervisor's serve.exited).

Total and linear: any text is accepted, lines are cut to `MAX_LINE` before matching, and
`classify_file` reads a log of any size in fixed chunks (logscan.py). A pure-Python loop over
every line of a 1 GB log takes minutes, so the file path finds candidate lines with
`bytes.find` on a few literals (catalog.KEYS) and runs the matchers only on those. Travels to
the host with catalog.py and logscan.py: stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

try:
    from gpudash.serve import catalog, logscan
except ImportError:  # on the host: the job's files/ folder is on sys.path
    import catalog  # type: ignore[no-redef, import-not-found]  # travels flat
    import logscan  # type: ignore[no-redef, import-not-found]  # travels flat

CATALOG = catalog.SIGNATURES  # every signature, each with the public report it was read in
MAX_LINE = 4096  # characters of a line the matchers look at
MAX_QUOTE = 400  # characters of a line a verdict quotes
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


def classify_file(path: str, engine: str, workers: int = 0) -> Failure | None:
    """Classify a log file of any size in bounded memory: the first line matching a
    signature, with its line number; None when none matches or the file cannot be read.

    logscan reads it: one `bytes.find` pass for catalog.PRIMARY per chunk, the matchers only
    on lines holding a key in a chunk that holds PRIMARY, or next to one that does, or among
    the file's last two; a big file in ranges by up to logscan.MAX_WORKERS processes
    (`workers`: 0 = as the size and CPUs warrant, 1 = this process only). A line without
    PRIMARY, a chunk away from any and from the end, is not looked at: the price of reading a
    healthy 1 GB log once. `engine` is accepted for the contract; the signatures hold for all.
    """
    try:
        found = logscan.find_first(path, judge, workers)
    except (OSError, ValueError):
        return None
    if found is None:
        return None
    sig, line, lineno = found
    return failure(sig, line, lineno)
