"""The system tools the suite runs, the Debian package of each, and the one way a test asks
for one: `require(tool)`, which fails (never skips) with one line naming the package.

Why fail and not skip: a skip hides missing coverage (issue 23 item 19: on a machine without
busybox one test failed and five skipped for the same cause). The README's test command and
`.ci/run` install every package listed here; tests/ssh/test_setup_docs.py checks that.
"""

from __future__ import annotations

import shutil

import pytest

PACKAGES: dict[str, str] = {
    # tool -> the Debian/Ubuntu package that ships it (packages.debian.org, bookworm)
    "busybox": "busybox",
    "dash": "dash",
    "tmux": "tmux",
    "sudo": "sudo",
    "git": "git",
    "ip": "iproute2",
    "ssh": "openssh-client",
    "ssh-keygen": "openssh-client",
    "sshd": "openssh-server",
    "curl": "curl",
    # non-POSIX login shells the exec strings must survive (tests/ssh/test_login_shells.py)
    "fish": "fish",
    "tcsh": "tcsh",
    "tc": "iproute2",
    "openssl": "openssl",
}


def require(tool: str) -> str:
    """The path of `tool`; a missing one fails the test in one line naming its package."""
    found = shutil.which(tool)
    if found is None:
        package = PACKAGES.get(tool, tool)
        pytest.fail(
            f"{tool} is not installed: `apt-get install -y {package}` "
            "(the README's test command installs it)",
            pytrace=False,
        )
    return found


def busybox_sh() -> tuple[str, str]:
    """busybox's `sh`, to run the probe sections under a second, smaller shell."""
    return (require("busybox"), "sh")
