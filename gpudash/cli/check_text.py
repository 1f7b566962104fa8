"""`gpudash check`'s text: a block per host, each finding once per fleet in full.

At fleet size the same finding (three identical hosts without uv) came back with its why/fix
paragraph for every host: twelve lines three times (issue 33, item 6). A finding identical to
one an earlier host showed (same severity, code, title, why and fix) is one line naming that
host, and the end lists each such finding once with every host it is on ("3 hosts: h0 h1
h2"). Host blocks still stream as each host's findings are final.
"""

from __future__ import annotations

from typing import TextIO

from gpudash.checks.finding import Finding, Severity, counts, worst_severity
from gpudash.checks.fixes import fix_phrase

Same = tuple[str, str, str, str, str]
"""What makes two hosts' findings one: severity, code, title, why and fix."""


def _same(f: Finding) -> Same:
    return (f.severity.value, f.code, f.title, f.why or "", f.fix or "")


class CheckText:
    """Writes host blocks as they come (`host`), then the shared findings (`end`)."""

    def __init__(self, out: TextIO, *, show_ok: bool) -> None:
        self.out = out
        self.show_ok = show_ok
        self.hosts: dict[Same, list[str]] = {}  # each finding shown, the hosts it is on
        self.first: dict[Same, Finding] = {}

    def host(self, name: str, findings: tuple[Finding, ...]) -> None:
        out = self.out
        n = counts(findings)
        worst = worst_severity(findings) or Severity.OK
        tally = ", ".join(f"{n[s]} {s.value}" for s in reversed(Severity) if n[s])
        out.write(f"{name}: {worst.value.upper()} ({tally or 'no findings'})\n")
        for f in findings:
            if f.severity is Severity.OK and not self.show_ok:
                continue
            key = _same(f)
            line = f"  {f.severity.value.upper():<4}  {f.code}: {f.title}"
            earlier = self.hosts.setdefault(key, [])
            earlier.append(name)
            if len(earlier) > 1:  # told in full for the first host already
                out.write(f"{line}  (as on {earlier[0]})\n")
                continue
            self.first[key] = f
            out.write(line + "\n")
            if f.severity.rank >= Severity.WARN.rank:
                if f.why:
                    out.write(f"        why: {f.why}\n")
                if f.fix:
                    task = fix_phrase(f.fix_task, f.fix_key)
                    out.write(f"        fix: {f.fix}{'  ' + task if task else ''}\n")
        out.flush()

    def end(self) -> None:
        """Each finding on more than one host, once, with its hosts (worst first)."""
        shared = [(k, hosts) for k, hosts in self.hosts.items() if len(hosts) > 1]
        if not shared:
            return
        shared.sort(key=lambda item: -self.first[item[0]].severity.rank)
        self.out.write("on several hosts:\n")
        for key, hosts in shared:
            f = self.first[key]
            self.out.write(
                f"  {f.severity.value.upper():<4}  {f.code}: {f.title}:"
                f" {len(hosts)} hosts: {' '.join(hosts)}\n"
            )
        self.out.flush()


def write_text(found: dict[str, tuple[Finding, ...]], out: TextIO, *, show_ok: bool) -> None:
    """Every host's block, then the shared findings (a file, or `--format text -o`)."""
    text = CheckText(out, show_ok=show_ok)
    for name, findings in found.items():
        text.host(name, findings)
    text.end()
