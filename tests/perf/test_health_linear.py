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
