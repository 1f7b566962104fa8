"""RDMA ports, each judged only against its own class.

A GPU host commonly carries several kinds of HCA on purpose: eight 400G InfiniBand compute
rails (ConnectX-7, "MT4129") beside a 100G or 200G Ethernet front-end or storage NIC
(ConnectX-6 Dx, "MT4125"), whose second port is often not cabled (imbue-ai/cluster-health#4,
kvcache-ai/Mooncake#2039). Comparing every port with every other one calls that design a
fault. A class is the ports of one HCA model on one link layer (what sysfs's `hca_type` and
`link_layer`, or ibstat's "CA type" and "Link layer", say); within a class a port slower than
the class's usual rate, or down while others of its class are up, is the finding. A class
whose ports are all down is said (info), not judged: an unused front-end port is normal, and
a host serving on one node needs no rail at all.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from gpudash.checks.finding import Finding, Severity


def port_class(p: Any) -> str:
    return f"{p.model or '?'} {p.link_layer or '?'}"


def rdma_findings(
    ports: list[Any], memlock_unlimited: bool, memlock_kib: int | None
) -> list[Finding]:
    out: list[Finding] = []
    classes: dict[str, list[Any]] = {}
    for p in ports:
        classes.setdefault(port_class(p), []).append(p)
    down: list[tuple[str, Any]] = []
    idle: list[tuple[str, list[Any]]] = []
    slow: list[tuple[str, float, Any]] = []
    for name, members in classes.items():
        up = [p for p in members if p.state == "ACTIVE"]
        if not up:
            idle.append((name, members))
            continue
        down += [(name, p) for p in members if p.state != "ACTIVE"]
        rates = [p.rate_gbps for p in up if p.rate_gbps]
        if len(rates) >= 2:
            counts = Counter(rates)
            top = max(counts.values())
            common = max(r for r, n in counts.items() if n == top)  # a tie: the faster is due
            slow += [(name, common, p) for p in up if p.rate_gbps and p.rate_gbps < common]
    src = "/sys/class/infiniband (or ibstat): state, rate, link layer, HCA type"
    if down:
        out.append(
            Finding(
                Severity.WARN,
                "health.rdma_down",
                f"{len(down)} RDMA port(s) down beside active ports of their class: "
                + ", ".join(f"{p.device}/{p.port} {p.state} ({c})" for c, p in down[:8]),
                why="NCCL spreads multi-node traffic over every HCA of a rail set; a port down "
                "lowers bandwidth or makes ranks pick a slower path.",
                fix="Check the cable and the switch port (`ibstat`); exclude the HCA with "
                "NCCL_IB_HCA until fixed.",
                facts={
                    "down": [f"{p.device}/{p.port}" for _, p in down],
                    "classes": {c: len(m) for c, m in classes.items()},
                    "judged_from": src,
                },
            )
        )
    if slow:
        out.append(
            Finding(
                Severity.WARN,
                "health.rdma_slow",
                f"{len(slow)} RDMA port(s) slower than the others of their class: "
                + ", ".join(
                    f"{p.device}/{p.port} {p.rate_gbps:g} of {r:g} Gb/s ({c})"
                    for c, r, p in slow[:8]
                ),
                why="Collectives over a rail set run at the slowest link's speed.",
                fix="Check the cable/transceiver and the switch port speed.",
                facts={
                    "slow": [f"{p.device}/{p.port} {p.rate_gbps:g}" for _, _, p in slow],
                    "classes": {c: len(m) for c, m in classes.items()},
                    "judged_from": src,
                },
            )
        )
    if idle:
        out.append(
            Finding(
                Severity.INFO,
                "health.rdma_class_down",
                "No active port in RDMA class(es) "
                + "; ".join(
                    f"{c}: {', '.join(f'{p.device}/{p.port}' for p in m[:6])}" for c, m in idle
                ),
                why="A class with no port up is unused here (an uncabled front-end port) or "
                "cut off as a whole; multi-node NCCL cannot use it either way.",
                fix="If these are compute rails, check their cables and the subnet manager "
                "(`ibstat`); otherwise nothing.",
                facts={
                    "idle": {c: [f"{p.device}/{p.port} {p.state}" for p in m] for c, m in idle},
                    "judged_from": src,
                },
            )
        )
    if ports and not memlock_unlimited and memlock_kib is not None:
        out.append(
            Finding(
                Severity.WARN,
                "health.memlock",
                f"memlock limit {memlock_kib} KiB with RDMA ports present",
                why="RDMA registers (pins) buffers; a low memlock limit makes NCCL "
                "fail to register memory over InfiniBand/RoCE.",
                fix="Set `ulimit -l unlimited` (limits.conf, or --ulimit memlock=-1).",
                facts={"memlock_kib": memlock_kib, "judged_from": "ulimit -l"},
            )
        )
    return out
