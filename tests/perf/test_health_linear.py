"""The health parsers are linear in their input: 1, 2, 4 and 8 MB of pathological text each
(long runs of one line, deep indentation, many ports), timed in CPU time with the garbage
collector off, so a hostile host's kernel log or `nvidia-smi -q` costs only its own size."""

from __future__ import annotations

import gc
import time

import pytest

from gpudash.probe.hostfacts import parse_rdma
from gpudash.probe.kernel_log import parse_kernel_log
from gpudash.probe.sections.health import parse_klog
from gpudash.probe.smiq import parse_smi_q


@pytest.mark.parametrize(
    ("parser", "unit"),
    [
        (parse_kernel_log, "[ 1.0] NVRM: Xid (PCI:0000:cb:00): 13, pid=1, name=x, y\n"),
        (parse_kernel_log, "NVRM: The NVIDIA GPU 0000:b3:00.0 " * 50 + "\n"),
        (parse_smi_q, "GPU 00000000:0E:00.0\n    Clocks Event Reasons\n        Idle : Active\n"),
        (parse_smi_q, "    " * 90 + "a : b\n"),
        (parse_rdma, "CA 'mlx5_0'\n        Port 1:\n                State: Active\n"),
        (parse_klog, "@try dmesg\nNVRM: Xid (PCI:0000:01:00): 79, x\n"),
        (parse_klog, "@try dmesg\n@rep 99\nNVRM: Xid (PCI:0000:01:00): 13, Fatal x\n"),
        # distinct (GPU, Xid) keys past both pools' caps: the dropped path
        (
            parse_kernel_log,
            "".join(f"NVRM: Xid (PCI:{i:04x}:01:00): {13 + i % 2 * 49}, x\n" for i in range(600)),
        ),
    ],
)
def test_health_parsers_are_linear(parser, unit) -> None:
    def took(mb: int) -> float:
        # CPU time of this process (not wall time: the machine may be busy), with the cyclic
        # garbage collector off: its passes scale with every object alive, not with the parser.
        text = unit * (mb * 2**20 // len(unit))
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            parser(text)
            return time.process_time() - start
        finally:
            gc.enable()

    took(1)
    times = {mb: min(took(mb) for _ in range(3)) for mb in (1, 2, 4, 8)}
    assert times[8] / times[4] < 3.0 and times[4] / times[2] < 3.0, times


def test_the_probes_kernel_log_filter_is_linear_and_bounded(tmp_path) -> None:
    """The section's awk over 1-8 MB of kernel log (a burst of one Xid, distinct GPUs, other
    NVRM lines): its time grows with the input and its output does not."""
    import resource
    import shlex
    import subprocess

    from gpudash.probe.sections import health
    from tests.support.sectionrun import PRELUDE

    unit = (
        "[ 1.0] NVRM: Xid (PCI:0000:cb:00): 13, pid=1, name=x, Graphics SM Warp Exception\n"
        "[ 1.1] NVRM: GPU at PCI:0000:cb:00: GPU-0b11d014\n"
        "[ 1.2] eth0: link up\n"
    )

    def run(mb: int) -> tuple[float, int]:
        log = tmp_path / f"{mb}.txt"
        log.write_text(unit * (mb * 2**20 // len(unit)))
        feed = f"{{ cat {shlex.quote(str(log))}; echo '@rc 0'; }} | gd_kfilter"
        script = f"{PRELUDE}\n{health.BODY}\n{feed}"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # CPU time: the machine is shared
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return cpu, len(out.stdout)

    run(1)
    times = {mb: min(run(mb) for _ in range(2)) for mb in (1, 2, 4, 8)}
    assert times[8][0] / times[4][0] < 3.0 and times[4][0] / times[2][0] < 3.0, times
    assert times[8][1] < 8000 and abs(times[8][1] - times[1][1]) < 100, times
