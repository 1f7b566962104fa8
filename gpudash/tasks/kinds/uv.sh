if command -v uv >/dev/null 2>&1; then
    echo "uv is already installed: $(command -v uv)"
    uv --version
    exit 0
fi
PATH="$PATH:$HOME/.local/bin:$HOME/.cargo/bin"  # where pip --user and the installer put uv
gd_pip=
for py in python3 python; do
    command -v "$py" >/dev/null 2>&1 || continue
    "$py" -m pip --version >/dev/null 2>&1 || continue
    gd_pip=$py
    echo "installing uv from PyPI with $py -m pip install --user"
    if "$py" -m pip install --user --upgrade uv \
        || "$py" -m pip install --user --upgrade --break-system-packages uv; then
        uv --version && exit 0
    fi
done
if [ -n "$gd_pip" ]; then
    echo "$gd_pip -m pip could not install uv (above): trying the official installer"
else
    echo "no usable pip: using the official installer"
fi
# Fetched to a file first: `curl ... | sh` exits as sh does, so a failed download went on
# to "uv: not found" (rc 127) instead of saying the network was the problem.
gd_installer="${GPUDASH_JOB:-${TMPDIR:-/tmp}}/uv-install.sh"
if command -v curl >/dev/null 2>&1; then
    gd_err=$(curl -LsSf https://astral.sh/uv/install.sh -o "$gd_installer" 2>&1)
elif command -v wget >/dev/null 2>&1; then
    gd_err=$(wget -qO "$gd_installer" https://astral.sh/uv/install.sh 2>&1)
else
    echo "gpudash: cannot install uv: no pip, curl or wget on this host"
    exit 1
fi || {
    echo "gpudash: cannot download https://astral.sh/uv/install.sh:" \
        "$(printf '%s' "$gd_err" | tail -n 1): set https_proxy, or install uv by hand"
    exit 1
}
sh "$gd_installer" || exit
uv --version
