"""The network section against loopback only: an HTTP server, a closed port, a silent one.

No test sends a packet beyond 127.0.0.1/::1 or resolves any name but "localhost" (which
/etc/hosts answers). GPUDASH_NET_TIMEOUT keeps the silent-server case to a second.
"""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudash.probe.parts import Part
from gpudash.probe.sections import network
from tests.support import FIXTURES
from tests.support.sectionrun import bin_dir, busybox_sh, run_raw, run_section

FIX = FIXTURES / "sections"
SECRET = "hf_PLANTEDsecretTOKENvalue0123456789"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def http_ok() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture
def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


@pytest.fixture
def silent() -> Iterator[str]:
    """Accepts connections (the kernel's backlog does) and never answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    yield f"http://127.0.0.1:{s.getsockname()[1]}/slow"
    s.close()


def _env(home: Path, targets: list[str], path: str = "/usr/bin:/bin", **extra: str) -> dict:
    return {
        "PATH": path,
        "HOME": str(home),
        "GPUDASH_NET_TARGETS": "\n".join(targets),
        "GPUDASH_NET_TIMEOUT": "1",
        **extra,
    }


def test_network_reports_ok_refused_and_timed_out_targets(
    tmp_path: Path, http_ok: str, closed_port: str, silent: str
) -> None:
    _, result = run_section(network, _env(tmp_path, [http_ok, closed_port, silent]))
    assert isinstance(result, network.Network)
    ok, refused, slow = result.targets
    assert (ok.url, ok.host, ok.ok, ok.http_status, ok.exit_code) == (
        http_ok, "127.0.0.1", True, 200, 0
    )  # fmt: skip
    assert ok.dns_ok is None  # an IP literal is not looked up
    assert ok.latency_ms is not None and 0 <= ok.latency_ms < 1000 and ok.error is None
    assert (refused.ok, refused.exit_code, refused.http_status) == (False, 7, None)
    assert refused.error and refused.error.startswith("curl: (7)")
    assert (slow.ok, slow.exit_code) == (False, 28)
    assert slow.error and "timed out" in slow.error.lower()


def test_network_checks_targets_in_parallel(tmp_path: Path, silent: str) -> None:
    started = time.monotonic()
    _, result = run_section(network, _env(tmp_path, [silent] * 4))
    assert isinstance(result, network.Network)
    assert [t.exit_code for t in result.targets] == [28] * 4
    assert time.monotonic() - started < 3.0  # four 1 s timeouts at once, not one by one


def test_network_resolves_localhost_before_asking_it(tmp_path: Path, http_ok: str) -> None:
    url = http_ok.replace("127.0.0.1", "localhost")
    _, result = run_section(network, _env(tmp_path, [url]))
    assert isinstance(result, network.Network)
    (target,) = result.targets
    assert target.host == "localhost" and target.dns_ok is True
    assert set(target.addresses) & {"127.0.0.1", "::1"}


def test_network_takes_the_host_out_of_ipv6_and_userinfo_urls(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET6) as s:
        s.bind(("::1", 0))
        port = s.getsockname()[1]
    targets = [f"http://[::1]:{port}/x", f"http://user@127.0.0.1:{port}/?q=1"]
    _, result = run_section(network, _env(tmp_path, targets))
    assert isinstance(result, network.Network)
    assert [(t.host, t.dns_ok, t.ok) for t in result.targets] == [
        ("::1", None, False),
        ("127.0.0.1", None, False),
    ]


def test_network_falls_back_to_wget_when_curl_is_missing(
    tmp_path: Path, http_ok: str, closed_port: str
) -> None:
    path = bin_dir(
        tmp_path / "bin", ("wget", "timeout", "grep", "tail", "date", "mktemp", "cat", "rm")
    )
    _, result = run_section(network, _env(tmp_path, [http_ok, closed_port], path))
    assert isinstance(result, network.Network)
    ok, refused = result.targets
    assert (ok.ok, ok.http_status, ok.exit_code) == (True, 200, 0)
    assert ok.latency_ms is not None
    assert not refused.ok and refused.exit_code not in (None, 0) and refused.error


def test_network_without_curl_or_wget_says_curl_not_found(tmp_path: Path, http_ok: str) -> None:
    path = bin_dir(tmp_path / "bin", ("mktemp", "cat", "rm"))
    _, result = run_section(network, _env(tmp_path, [http_ok], path))
    assert isinstance(result, network.Network)
    (target,) = result.targets
    assert (target.ok, target.error) == (False, "curl: not found")


def test_network_reports_token_presence_and_never_its_value(tmp_path: Path, http_ok: str) -> None:
    token_file = tmp_path / ".cache" / "huggingface" / "token"
    token_file.parent.mkdir(parents=True)
    token_file.write_text(SECRET)
    cases = [
        ({"HF_TOKEN": SECRET}, "env HF_TOKEN"),
        ({"HUGGING_FACE_HUB_TOKEN": SECRET}, "env HUGGING_FACE_HUB_TOKEN"),
        ({}, "file ~/.cache/huggingface/token"),
        ({"HF_HOME": str(tmp_path / "nowhere")}, None),
        ({"HF_TOKEN_PATH": str(token_file)}, "file ~/.cache/huggingface/token"),
    ]
    for extra, source in cases:
        env = _env(tmp_path, [http_ok], **extra)
        text, _, _ = run_raw(network, env)
        assert SECRET not in text
        assert SECRET[3:12] not in text
        _, result = run_section(network, env)
        assert isinstance(result, network.Network)
        assert (result.hf_token, result.hf_token_source) == (source is not None, source)
        assert SECRET not in repr(result)


def test_network_treats_an_empty_token_file_as_no_token(tmp_path: Path) -> None:
    token_file = tmp_path / ".cache" / "huggingface" / "token"
    token_file.parent.mkdir(parents=True)
    token_file.write_text("")
    _, result = run_section(network, _env(tmp_path, [], HF_TOKEN=""))
    assert isinstance(result, network.Network)
    assert (result.hf_token, result.hf_token_source, result.targets) == (False, None, ())


def test_network_names_proxy_variables_and_offline_mode_without_values(tmp_path: Path) -> None:
    env = _env(tmp_path, [], https_proxy="http://user:pw@127.0.0.1:1", HF_HUB_OFFLINE="1")
    text, _, _ = run_raw(network, env)
    assert "pw@" not in text
    _, result = run_section(network, env)
    assert isinstance(result, network.Network)
    assert result.proxies == ("https_proxy",) and result.hf_offline


def test_network_reads_the_same_under_busybox_sh(
    tmp_path: Path, http_ok: str, closed_port: str
) -> None:
    env = _env(tmp_path, [http_ok, closed_port], HF_TOKEN=SECRET)
    text, _, _ = run_raw(network, env, shell=busybox_sh())
    assert SECRET not in text
    _, result = run_section(network, env, shell=busybox_sh())
    assert isinstance(result, network.Network)
    assert [(t.ok, t.exit_code) for t in result.targets] == [(True, 0), (False, 7)]
    assert result.hf_token_source == "env HF_TOKEN"


def test_network_parses_the_h200_capture_of_a_host_without_dns() -> None:
    lines = (FIX / "net.txt").read_text().splitlines()
    error, timing = lines[0], lines[1]
    curl_rc, dns_rc = lines[2].split("=")[1], lines[3].split("=")[1]
    text = (
        "url\thttps://huggingface.co\nhost\thuggingface.co\n"
        f"dns\t{dns_rc}\ncurl\t{curl_rc}\t{timing}\nerr\t{error}"
    )
    result = network.parse(
        {"token": Part("token", 0, "none"), "target.1": Part("target.1", 0, text)}
    )
    (target,) = result.targets
    assert target == network.Target(
        url="https://huggingface.co",
        host="huggingface.co",
        dns_ok=False,
        ok=False,
        http_status=None,
        latency_ms=0.1,
        error="curl: (6) Could not resolve host: huggingface.co",
        exit_code=6,
    )
    assert (result.hf_token, result.notes) == (False, ())


def test_network_explains_a_curl_exit_code_that_came_without_a_message() -> None:
    text = "url\thttps://x\nhost\tx\ndns\t0\ncurl\t28\t000 5.001"
    (target,) = network.parse({"target.1": Part("target.1", 0, text)}).targets
    assert (target.error, target.exit_code, target.latency_ms) == ("timed out", 28, 5001.0)
