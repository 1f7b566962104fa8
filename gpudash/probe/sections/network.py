"""The network section: can this host reach the model hub, package indexes and git, and
does it hold a Hugging Face token.

Fresh GPU machines are often offline or firewalled, and a download that hangs for minutes is
the costly way to find out, so each target gets a DNS lookup and one HTTP(S) request, all
targets at once in the background, each bounded by its own short timeout (curl `--max-time`;
`GPUDASH_NET_TIMEOUT` overrides it, e.g. for tests). Only the token's PRESENCE is read: its
value is tested with `[ -n ]`/`[ -s ]` and never printed, echoed or passed to a command.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from gpudash.probe.markdown import md, md_table
from gpudash.probe.parts import Part, text_of
from gpudash.text import clean_line, is_uint

NAME = "network"
TIMEOUT = 15.0  # DNS and HTTP each bounded by 5 s, run in parallel across targets

BODY = r"""
gd_to() { _to=$1; shift; if have timeout; then timeout "$_to" "$@"; else "$@"; fi; }
case ${GPUDASH_NET_TIMEOUT:-} in
  ''|*[!0-9.]*|.*|*.*.*) gd_T=5; gd_C=3 ;;
  *) gd_T=$GPUDASH_NET_TIMEOUT; gd_C=$GPUDASH_NET_TIMEOUT ;;
esac
gd_target() {
  printf 'url\t%s\n' "$1"
  _h=${1#*://}; _h=${_h%%/*}; _h=${_h%%\?*}; _h=${_h%%#*}; _h=${_h##*@}
  case $_h in
    \[*) _h=${_h#\[}; _h=${_h%%\]*}; _lit=1 ;;
    *) _h=${_h%:*}; case $_h in *[!0-9.]*|'') _lit=0 ;; *) _lit=1 ;; esac ;;
  esac
  printf 'host\t%s\n' "$_h"
  if [ -z "$_h" ]; then printf 'dns\tno host\n'
  elif [ "$_lit" = 1 ]; then printf 'dns\tliteral\n'
  elif have getent; then
    _a=$(gd_to "$gd_T" getent hosts "$_h"); printf 'dns\t%s\n' "$?"
    while read -r ip _; do [ -n "$ip" ] && printf 'addr\t%s\n' "$ip"; done <<GD_EOF
$_a
GD_EOF
  else printf 'dns\tgetent: not found\n'
  fi
  if have curl; then
    _o=$(curl -sS -o /dev/null -w '%{http_code} %{time_total}' --max-time "$gd_T" \
      --connect-timeout "$gd_C" "$1" 2>&1); _rc=$?
    _w=${_o##*"$GD_NL"}
    printf 'curl\t%s\t%s\n' "$_rc" "$_w"
    [ "$_o" = "$_w" ] || printf 'err\t%s\n' "${_o%%"$GD_NL"*}"
  elif have wget; then
    _s=$(date +%s%N)
    _o=$(gd_to "$gd_T" wget -S -O /dev/null "$1" 2>&1); _rc=$?
    _e=$(date +%s%N)
    printf 'wget\t%s\t%s\t%s\n' "$_rc" "$_s" "$_e"
    printf '%s\n' "$_o" | grep -E '^ *HTTP/[0-9.]+ [0-9]{3}' | tail -n 1 |
      while IFS= read -r _l; do printf 'status\t%s\n' "$_l"; done
    [ "$_rc" = 0 ] || printf 'err\t%s\n' "$(printf '%s\n' "$_o" | grep -v '^ ' | tail -n 1)"
  else printf 'err\tcurl: not found\n'
  fi
}
gd_token() {
  if [ -n "${HF_TOKEN:-}" ]; then echo "env HF_TOKEN"; return 0; fi
  if [ -n "${HUGGING_FACE_HUB_TOKEN:-}" ]; then echo "env HUGGING_FACE_HUB_TOKEN"; return 0; fi
  _f=${HF_TOKEN_PATH:-${HF_HOME:-$HOME/.cache/huggingface}/token}
  [ -s "$_f" ] || { echo "none"; return 0; }
  [ -n "${HOME:-}" ] && case $_f in "$HOME"/*) _f="~/${_f#"$HOME"/}" ;; esac
  printf 'file %s\n' "$_f"
}
gd_flags() {
  [ -n "${HF_HUB_OFFLINE:-}" ] && printf 'HF_HUB_OFFLINE=%s\n' "$HF_HUB_OFFLINE"
  for _v in https_proxy HTTPS_PROXY http_proxy HTTP_PROXY all_proxy ALL_PROXY; do
    case $_v in
      https_proxy) _x=${https_proxy:-} ;; HTTPS_PROXY) _x=${HTTPS_PROXY:-} ;;
      http_proxy) _x=${http_proxy:-} ;; HTTP_PROXY) _x=${HTTP_PROXY:-} ;;
      all_proxy) _x=${all_proxy:-} ;; *) _x=${ALL_PROXY:-} ;;
    esac
    [ -n "$_x" ] && printf 'proxy %s\n' "$_v"
  done
  return 0
}
part token gd_token
part flags gd_flags
# One target runs inline; several run at once, each into a file of its own.
gd_nd=
case ${GPUDASH_NET_TARGETS:-} in *?"$GD_NL"?*)
  gd_nd=$(mktemp -d "${TMPDIR:-/tmp}/gpudash-net.XXXXXX" 2>/dev/null) || gd_nd= ;;
esac
gd_n=0
while IFS= read -r gd_u; do
  [ -n "$gd_u" ] || continue
  gd_n=$((gd_n + 1))
  if [ -n "$gd_nd" ]; then gd_target "$gd_u" >"$gd_nd/$gd_n" 2>&1 </dev/null &
  else part "target.$gd_n" gd_target "$gd_u" </dev/null
  fi
done <<GD_EOF
${GPUDASH_NET_TARGETS:-}
GD_EOF
wait
gd_cat() { while IFS= read -r _l || [ -n "$_l" ]; do printf '%s\n' "$_l"; done <"$1"; }
if [ -n "$gd_nd" ]; then
  gd_i=1
  while [ "$gd_i" -le "$gd_n" ]; do
    part "target.$gd_i" gd_cat "$gd_nd/$gd_i"; gd_i=$((gd_i + 1))
  done
  rm -rf "$gd_nd"
fi
"""

# curl exit codes worth a word when curl printed none (see curl(1) EXIT CODES).
_CURL_ERRORS = {
    5: "could not resolve proxy",
    6: "could not resolve host",
    7: "could not connect",
    28: "timed out",
    35: "TLS handshake failed",
    60: "TLS certificate not trusted",
}


@dataclass(frozen=True)
class Target:
    url: str
    host: str | None
    dns_ok: bool | None  # None: not looked up (IP literal, or no getent)
    addresses: tuple[str, ...] = ()
    ok: bool = False  # answered with 2xx or 3xx
    http_status: int | None = None
    latency_ms: float | None = None
    error: str | None = None  # one line: curl's message, "curl: not found", ...
    exit_code: int | None = None  # curl's (or wget's) exit status


@dataclass(frozen=True)
class Network:
    targets: tuple[Target, ...] = ()
    hf_token: bool = False
    hf_token_source: str | None = None  # "env HF_TOKEN", "file ~/.cache/huggingface/token"
    hf_offline: bool = False  # HF_HUB_OFFLINE set
    proxies: tuple[str, ...] = ()  # names of proxy variables that are set (never values)
    notes: tuple[str, ...] = ()


def parse(parts: Mapping[str, Part]) -> Network:
    notes: list[str] = []
    token = text_of(parts, "token").strip()
    source = None
    if token.startswith(("env ", "file ")):
        source = clean_line(token.splitlines()[0])[:200]
    elif token != "none":
        notes.append("HF token: not checked")
    flags = text_of(parts, "flags").splitlines()
    targets = []
    numbered = sorted(
        (int(n[7:]), p) for n, p in parts.items() if re.fullmatch(r"target\.\d{1,6}", n)
    )
    for _, part in numbered:
        targets.append(_target(part.text))
        if part.rc is None:
            notes.append(f"{targets[-1].url}: cut off (timeout)")
    return Network(
        targets=tuple(targets),
        hf_token=source is not None,
        hf_token_source=source,
        hf_offline=any(f.startswith("HF_HUB_OFFLINE=") for f in flags),
        proxies=tuple(clean_line(f[6:])[:40] for f in flags if f.startswith("proxy ")),
        notes=tuple(notes),
    )


def _clean(value: str | None) -> str | None:
    return (clean_line(value).strip()[:300] or None) if value else None


def _target(text: str) -> Target:
    rec: dict[str, list[str]] = {}
    addresses: list[str] = []
    for line in text.splitlines():
        key, _, value = line.partition("\t")
        if key == "addr":
            addresses.append(clean_line(value.strip())[:64])
        elif key in ("url", "host", "dns", "curl", "wget", "status", "err") and key not in rec:
            rec[key] = value.split("\t")
    dns = (rec.get("dns") or [""])[0].strip()
    dns_ok = True if dns == "0" else False if re.fullmatch(r"\d{1,3}", dns) else None
    status = latency = code = None
    error = _clean((rec.get("err") or [""])[0])
    if "curl" in rec:
        code = _int(rec["curl"][0])
        m = re.fullmatch(r"\s*(\d{3})\s+(\d+(?:[.,]\d+)?)\s*", rec["curl"][-1])
        if m:
            status = int(m.group(1)) or None  # 000: no response
            latency = round(float(m.group(2).replace(",", ".")) * 1000, 1)
    elif "wget" in rec:
        code = _int(rec["wget"][0])
        w = rec["wget"]
        if len(w) >= 3 and is_uint(w[1]) and is_uint(w[2]) and len(w[1]) > 12:
            latency = round((int(w[2]) - int(w[1])) / 1e6, 1)
        m = re.search(r"HTTP/[\d.]+\s+(\d{3})", " ".join(rec.get("status", [])))
        status = int(m.group(1)) if m else None
    if error is None and code not in (None, 0):
        error = _CURL_ERRORS.get(code, f"exit {code}") if "curl" in rec else f"wget exit {code}"
    if dns_ok is False and error is None:
        error = "could not resolve host"
    ok = code == 0 and status is not None and 200 <= status < 400
    return Target(
        url=_clean((rec.get("url") or [""])[0]) or "?",
        host=_clean((rec.get("host") or [""])[0]),
        dns_ok=dns_ok,
        addresses=tuple(a for a in addresses if a),
        ok=ok,
        http_status=status,
        latency_ms=latency,
        error=None if ok else error,
        exit_code=code,
    )


def _int(value: str) -> int | None:
    return int(value) if re.fullmatch(r"\s*-?\d{1,6}\s*", value or "") else None


def summary(data: Network) -> str:
    """The one line `gpudash probe` prints for this section."""
    bits = []
    for t in data.targets:
        if t.ok:
            bits.append(
                f"{t.host} ok {t.latency_ms:.0f} ms" if t.latency_ms is not None else f"{t.host} ok"
            )
        else:
            name = t.host or (t.url if t.url != "?" else "a site (its check was cut off)")
            bits.append(f"{name} FAILED ({t.error or 'no answer'})")  # never "None FAILED"
    bits.append("HF token: present" if data.hf_token else "HF token: absent")
    return " · ".join(bits)


# --- its part of the Markdown report (`gpudash report HOST`)

TITLE = "Network"


def report(n: Network) -> list[str]:
    lines = []
    if n.targets:
        rows = []
        for t in n.targets:
            dns = "?" if t.dns_ok is None else "ok" if t.dns_ok else "failed"
            latency = "" if t.latency_ms is None else f"{t.latency_ms:.0f} ms"
            rows.append((t.url, dns, t.http_status or "", latency, "ok" if t.ok else t.error))
        lines += md_table(["Target", "DNS", "HTTP", "Latency", "Result"], rows)
    else:
        lines.append("No network targets probed.")
    lines.append("")
    token = f"present ({md(n.hf_token_source)})" if n.hf_token else "none"
    extra = "; HF_HUB_OFFLINE set" if n.hf_offline else ""
    proxies = f"; proxy variables: {md(', '.join(n.proxies))}" if n.proxies else ""
    lines.append(f"HF token: {token}{extra}{proxies}.")
    return lines
