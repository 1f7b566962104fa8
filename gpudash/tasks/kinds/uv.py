"""uv: pip --user where pip works, else astral.sh's installer (fetched to a file first)."""

from gpudash.tasks.kinds.base import Kind, sh

KIND = Kind(
    "uv",
    {},
    sh("uv.sh"),
    "command -v uv",
    affects=("env",),
    default_timeout=600,
    # pip from PyPI, else astral.sh's installer, which fetches uv from GitHub
    downloads=("pypi.org", "files.pythonhosted.org", "astral.sh", "github.com"),
    offline_way="set https_proxy, or install uv by hand",
)
