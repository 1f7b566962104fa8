"""Network: can the host reach where models and wheels come from, and can it fetch gated
models (an HF token present)?

Whether a model is gated is only known when the config says so (`expect.models = [{ repo =
"...", gated = true }]`): gpudash never asks Hugging Face.
"""

from __future__ import annotations

from gpudash.checks.context import Context
from gpudash.checks.finding import Finding, Severity

SERVICES = {
    "huggingface.co": "Hugging Face",
    "hf.co": "Hugging Face",
    "pypi.org": "PyPI",
    "files.pythonhosted.org": "PyPI",
    "download.pytorch.org": "the PyTorch index",
    "github.com": "GitHub",
}
_WHY = {
    "Hugging Face": "Model downloads (hf download, the server's first start) fail.",
    "PyPI": "pip/uv installs of SGLang, vLLM and their dependencies fail.",
    "the PyTorch index": "CUDA builds of torch (download.pytorch.org/whl/cuXYZ) cannot be "
    "installed.",
    "GitHub": "Installs from git and release downloads (uv's installer) fail.",
}


def check(ctx: Context) -> list[Finding]:
    net = ctx.network
    if net is None:
        return []
    out: list[Finding] = []
    for t in net.targets:
        if t.ok:
            continue
        if t.url == "?":  # cut off before it printed its URL: nothing to name but that
            title = "a site check was cut off before it answered (the probe's time ran out)"
        else:
            service = SERVICES.get((t.host or "").lower(), t.host or t.url)
            reason = t.error or (f"HTTP {t.http_status}" if t.http_status else "no answer")
            title = f"{service} unreachable ({t.url}): {reason}"
        service = SERVICES.get((t.host or "").lower(), t.host or t.url)
        out.append(
            Finding(
                Severity.WARN,
                "network.unreachable",
                title,
                why=_WHY.get(service, "Downloads from it fail."),
                fix="Check DNS, the firewall and proxy settings (https_proxy); use a mirror "
                "(HF_ENDPOINT, --index-url) if the host is meant to be offline.",
                facts={
                    "url": t.url,
                    "dns_ok": t.dns_ok,
                    "http_status": t.http_status,
                    "error": t.error,
                },
            )
        )
    if net.hf_offline:
        out.append(
            Finding(
                Severity.INFO,
                "network.hf_offline",
                "HF_HUB_OFFLINE is set: the hub is never asked",
                why="Only models already on disk load; downloads are refused.",
                facts={},
            )
        )
    exp = ctx.expect
    gated = [m for m in (exp.models or ()) if m.gated] if exp is not None else []
    if gated and not net.hf_token:
        from gpudash.checks.disk import find_model

        needed = [
            m.repo
            for m in gated
            if ctx.models is None
            or (found := find_model(ctx.models, m.repo)) is None
            or not found.complete
        ]
        if needed:
            out.append(
                Finding(
                    Severity.FAIL,
                    "network.no_hf_token_for_gated",
                    f"no HF token on the host, and {', '.join(needed)} is gated",
                    why="Gated repos (the config marks them gated = true) answer 401/403 "
                    "without a token that has accepted the license.",
                    fix="Set HF_TOKEN for the download task, or run `hf auth login` on the host.",
                    facts={"gated": needed},
                    fix_task="model",
                    fix_params={"repo": needed[0]},
                )
            )
    if not out and net.targets:
        hosts = ", ".join(t.host or t.url for t in net.targets)
        out.append(Finding(Severity.OK, "network.ok", f"reaches {hosts}"))
    return out
