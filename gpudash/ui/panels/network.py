"""The Network panel: each target OK/failed with latency, DNS, and the HF token's presence."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from gpudash.probe.sections.network import Network, Target
from gpudash.ui.panels.base import Panel
from gpudash.ui.render import dim, remote
from gpudash.ui.widgets.grid import Column, Grid


def _dns(target: Target) -> Text:
    if target.dns_ok is None:
        return dim("–")
    return Text("ok", style="green") if target.dns_ok else Text("failed", style="bold red")


class NetworkPanel(Panel[Network]):
    SECTION = "network"
    TITLE = "Network"

    def body(self, data: Network) -> RenderableType:
        longest = max((len(t.url) for t in data.targets), default=6)
        table = Grid(
            Column(Text("target", style="bold"), give="ellipsis", min_width=min(40, longest)),
            Column(Text("DNS", style="bold")),
            Column(Text("result", style="bold"), give="ellipsis", min_width=8),
        )
        for target in data.targets:
            if target.ok:
                result = Text("OK", style="bold green")
                if target.latency_ms is not None:
                    result.append(f" {target.latency_ms:.0f} ms")
            else:
                result = Text("FAILED ", style="bold red")
                result.append(remote(target.error or "no answer"))
            table.add_row(remote(target.url), _dns(target), result)
        token = (
            Text.assemble(
                ("HF token: present", "green"), " ", remote(data.hf_token_source or "", style="dim")
            )
            if data.hf_token
            else Text("HF token: absent", style="yellow")
        )
        extra = [token]
        if data.hf_offline:
            extra.append(Text("HF_HUB_OFFLINE is set", style="yellow"))
        if data.proxies:
            extra.append(Text.assemble("proxies: ", remote(", ".join(data.proxies))))
        line = Text("  ").join(extra)
        parts: list[RenderableType] = [table if data.targets else dim("no targets"), line]
        parts.extend(remote(n, style="dim") for n in data.notes)
        return Group(*parts)
