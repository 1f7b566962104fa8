"""pip: packages into the venv with `uv pip install`, from PyPI, a mirror or local wheels.
Its body and check are shared by the kinds that install one stack (torch, serving)."""

from gpudash.tasks.kinds.base import VENV, Kind, Param, sh

PIP_BODY = sh("pip.sh")
HAS_PACKAGES = sh("pip_check.sh")

KIND = Kind(
    "pip",
    {
        "venv": VENV,
        "packages": Param("packages", required=True),
        "index_url": Param("url", ""),
        "find_links": Param("path", ""),
        "no_index": Param("bool", False),
    },
    PIP_BODY,
    HAS_PACKAGES,
    affects=("env",),
    downloads=("pypi.org", "files.pythonhosted.org"),
    offline_way="set https_proxy, or use params.index_url / find_links",
)
