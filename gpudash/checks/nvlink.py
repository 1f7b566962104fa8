"""NVLink: is each SXM/HGX-class board wired as that board is built, with the fabric up?

An 8-GPU HGX H100/H200/B200 board shows NV18 on all 28 pairs; a pair on PCIe, one pair with
fewer links (NV17 among NV18), inactive links in `nvidia-smi nvlink -s`, or an NVSwitch fabric
whose state is not "Completed" each mean a board or fabric-manager problem, and tensor
parallel traffic silently falling back to PCIe (or CUDA init failing outright).

Volta-era SXM2 boards are partial meshes by design (DGX-1 hybrid cube-mesh, IBM AC922 pairs
and triples: gpudash.checks.facts.nvlink_boards): there each GPU must reach its board's
number of NVLink peers with its board's number of links; pairs on PCIe/SMP are expected. An
SXM2 host that is no known board is said to be not judged, never failed.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

from gpudash.checks.context import Context
from gpudash.checks.facts.nvlink_boards import SXM2_ERA, Board, boards_for
from gpudash.checks.finding import Finding, Severity

if TYPE_CHECKING:
    from gpudash.probe.sections.topology import Topology
    from gpudash.probe.topo import Topology as Matrix

# GPU names sold as SXM/HGX modules (always NVLinked, usually through NVSwitch). PCIe and NVL
# (PCIe card with a bridge) variants are excluded by name.
_SXM_CLASS = re.compile(r"SXM|HGX|\b(?:H100|H200|H800|H20|B100|B200|B300|GB200|GB300)\b", re.I)
_NOT_SXM = re.compile(r"PCIE|\bNVL\b", re.I)
_NV = re.compile(r"NV(\d+)")
FABRIC_READY = ("Completed", "N/A")


def sxm_class(name: str) -> bool:
    return bool(_SXM_CLASS.search(name)) and not _NOT_SXM.search(name)


def check(ctx: Context) -> list[Finding]:
    gpus = ctx.gpu_list
    if len(gpus) < 2 or not all(sxm_class(g.name) for g in gpus):
        return []
    topo = ctx.topology
    if topo is None or topo.missing or topo.matrix is None:
        return []
    names = ", ".join(dict.fromkeys(g.name for g in gpus))
    if any(SXM2_ERA.search(g.name) for g in gpus):
        out, board = _per_board(topo.matrix, [g.name for g in gpus], names)
    else:
        out, board = _all_pairs(topo.matrix, names), None
    out.extend(_links_and_fabric(topo, _fabric_read_by_health(ctx)))
    if not out:
        summary = f"{topo.summary}" + (f"; wired as {board.description}" if board else "")
        out.append(
            Finding(
                Severity.OK,
                "nvlink.ok",
                f"NVLink: {summary}",
                facts={"summary": topo.summary, "board": board.key if board else None},
            )
        )
    return out


def _all_pairs(matrix: Matrix, names: str) -> list[Finding]:
    """Boards that put every GPU pair on NVLink (NVSwitch or a 4-GPU direct mesh)."""
    out: list[Finding] = []
    pairs = list(matrix.pairs())
    off = [(a, b, t) for a, b, t in pairs if not _NV.fullmatch(t)]
    if off:
        shown = [f"{a}-{b} {t}" for a, b, t in off[:8]]
        out.append(
            Finding(
                Severity.FAIL,
                "nvlink.missing_pairs",
                f"{len(off)} of {len(pairs)} GPU pairs are not on NVLink on a {names} board",
                why=(
                    "SXM/HGX GPUs are all NVLinked; a pair on PCIe means a failed link or "
                    "switch tray, and tensor-parallel all-reduce drops to PCIe speed."
                ),
                fix="Check `nvidia-smi topo -m` and `nvidia-smi nvlink -s`; reset the GPUs or "
                "raise a hardware ticket with the provider.",
                facts={"pairs": shown, "more": max(0, len(off) - len(shown)), "gpus": names},
            )
        )
    counts = [(a, b, int(m.group(1))) for a, b, t in pairs if (m := _NV.fullmatch(t))]
    if counts:
        common, _ = Counter(n for *_, n in counts).most_common(1)[0]
        low = [(a, b, n) for a, b, n in counts if n < common]
        if low:
            shown = [f"{a}-{b} NV{n}" for a, b, n in low[:8]]
            out.append(
                Finding(
                    Severity.WARN,
                    "nvlink.fewer_links",
                    f"{len(low)} GPU pair(s) have fewer NVLinks than the others (NV{common})",
                    why="A pair with fewer links has a link down: its bandwidth is lower and "
                    "collectives run at the slowest pair's speed.",
                    fix="Check `nvidia-smi nvlink -s` for inactive links; reset the GPUs or "
                    "raise a hardware ticket.",
                    facts={"pairs": shown, "usual": f"NV{common}"},
                )
            )
    return out


def _fabric_read_by_health(ctx: Context) -> bool:
    """The health section reads Fabric State and Status on every GPU with the host's uptime
    (`gpudash.checks.fabric`): where it did, the fabric is judged there, once."""
    health = ctx.section("health")
    return any(getattr(g, "fabric_state", None) for g in getattr(health, "gpus", ()))


def _links_and_fabric(topo: Topology, fabric_judged: bool = False) -> list[Finding]:
    out: list[Finding] = []
    if topo.inactive_links:
        per_gpu = {
            g.index: [link.link for link in g.links if not link.active]
            for g in (topo.nvlink.gpus if topo.nvlink else ())
            if any(not link.active for link in g.links)
        }
        out.append(
            Finding(
                Severity.WARN,
                "nvlink.inactive_links",
                f"{topo.inactive_links} NVLink(s) inactive",
                why="Inactive links lower NVLink bandwidth between the GPUs they serve.",
                fix="Reset the GPUs (`nvidia-smi -r`) or reboot; if they stay inactive, raise a "
                "hardware ticket.",
                facts={"inactive": {f"GPU {k}": v for k, v in per_gpu.items()}},
            )
        )
    bad = [s for s in topo.fabric_states if s not in FABRIC_READY]
    if bad and not fabric_judged:
        out.append(
            Finding(
                Severity.FAIL,
                "nvlink.fabric_not_ready",
                f"GPU fabric state is {', '.join(sorted(set(bad)))} on {len(bad)} GPU(s)",
                why="Until the NVSwitch fabric is trained, CUDA init fails (error 802, "
                '"system not yet initialized") or NVLink is unusable.',
                fix="Start nvidia-fabricmanager (matching the driver version) and wait for "
                "`nvidia-smi -q` to show Fabric State: Completed.",
                facts={"states": list(topo.fabric_states)},
            )
        )
    return out


def _per_gpu(matrix: Matrix) -> dict[str, tuple[int, int]]:
    """GPU -> (NVLink peers, NVLinks to other GPUs), from the pairs the matrix describes."""
    out = {g: (0, 0) for g in matrix.gpus}
    for a, b, token in matrix.pairs():
        m = _NV.fullmatch(token)
        if m:
            for g in (a, b):
                peers, links = out[g]
                out[g] = (peers + 1, links + int(m.group(1)))
    return out


def _per_board(matrix: Matrix, names: list[str], shown: str) -> tuple[list[Finding], Board | None]:
    """A partial-mesh board: each GPU's NVLink peers and links against the board's."""
    n = len(names)
    complete = len(list(matrix.pairs())) == n * (n - 1) // 2 and len(matrix.gpus) == n
    boards = boards_for(names[0], n) if len(set(names)) == 1 else ()
    per_gpu = _per_gpu(matrix)
    seen = {g: f"{p} peers, {links} links" for g, (p, links) in per_gpu.items()}
    if not boards or not complete:
        why = (
            "the topo -m matrix does not describe every GPU pair"
            if boards
            else f"no known board has {n} x {shown} (known: DGX-1 8x V100 SXM2, IBM AC922 "
            "4x or 6x V100 SXM2)"
        )
        return [
            Finding(
                Severity.INFO,
                "nvlink.board_unknown",
                f"NVLink completeness not judged on this {n} x {shown} host: {why}",
                why="SXM2 boards of this era are partial NVLink meshes whose shape the board "
                "decides; without knowing the board, a pair on PCIe may be by design.",
                fix="Compare `nvidia-smi topo -m` with the server's documentation.",
                facts={"per_gpu": seen},
            )
        ], None
    for board in boards:
        if all(v == (board.peers, board.links) for v in per_gpu.values()):
            return [], board
    # The board of this model and count whose peer count most GPUs match.
    board = max(boards, key=lambda b: sum(p == b.peers for p, _ in per_gpu.values()))
    out: list[Finding] = []
    short = {g: v for g, v in per_gpu.items() if v[0] < board.peers}
    fewer = {g: v for g, v in per_gpu.items() if v[0] >= board.peers and v[1] < board.links}
    if short:
        out.append(
            Finding(
                Severity.FAIL,
                "nvlink.missing_pairs",
                f"{', '.join(short)} reach{'es' if len(short) == 1 else ''} fewer NVLink peers "
                f"than a {board.description} gives each GPU ({board.peers})",
                why="On this board each GPU has a fixed set of NVLink peers; one fewer means a "
                "link or GPU connector is down, and traffic to that peer crawls over PCIe/SMP.",
                fix="Check `nvidia-smi nvlink -s` for inactive links; reset the GPUs or raise "
                "a hardware ticket.",
                facts={"per_gpu": seen, "board": board.key, "source": board.source},
            )
        )
    if fewer:
        out.append(
            Finding(
                Severity.WARN,
                "nvlink.fewer_links",
                f"{', '.join(fewer)} ha{'s' if len(fewer) == 1 else 've'} fewer NVLinks to "
                f"other GPUs than a {board.description} gives each GPU ({board.links})",
                why="A missing link lowers the bandwidth to that peer.",
                fix="Check `nvidia-smi nvlink -s` for inactive links; reset the GPUs or raise "
                "a hardware ticket.",
                facts={"per_gpu": seen, "board": board.key, "source": board.source},
            )
        )
    if not out:  # more peers or links than any known board: not one of them
        return _per_board(matrix, ["?"] * n, shown)[0], None
    return out, board
