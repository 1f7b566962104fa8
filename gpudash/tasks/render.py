"""Task scripts as text: `export K=<shlex.quote(v)>` lines, a fixed prelude, then the body.

No value is ever templated into shell code. The body is a constant (a built-in kind's, or the
`run` a user wrote in their own config) that reads every parameter as `"$GPUDASH_NAME"`.
Paths may be written `~/x`: the value travels quoted, and the prelude expands a leading `~/`
on the host (quoting suppresses the shell's own tilde expansion), by variable name only.

Secrets never enter the script, nor any file on the host: the job's stdin is a pipe holding
their `export` lines (`gpudash.tasks.job_scripts` says how), which the prelude reads and
evaluates before the body runs, then stdin is /dev/null again; anything shown masks them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping

_VAR = re.compile(r"^[A-Z_][A-Z0-9_]*$")
MASK = "********"

# Under `sudo -n /bin/sh script.sh` the environment is reset, so the script finds its job dir
# from its own path rather than from the wrapper's environment.
_PRELUDE = """\
GPUDASH_JOB=$(cd "$(dirname "$0")" 2>/dev/null && pwd)
export GPUDASH_JOB
if [ ! -t 0 ]; then
    eval "$(cat)"
fi
exec </dev/null
"""

_PATH_SETUP = """\
PATH="$HOME/.local/bin:$HOME/.cargo/bin:$PATH"
export PATH
"""


def check_var(name: str) -> str:
    if not _VAR.match(name):
        raise ValueError(f"environment variable name {name!r}: expected [A-Z_][A-Z0-9_]*")
    return name


def exports(values: Mapping[str, str]) -> str:
    """One `export NAME=<quoted>` line per value: the only way a value reaches the host."""
    return "".join(f"export {check_var(k)}={shlex.quote(v)}\n" for k, v in values.items())


def home_expansion(names: Iterable[str]) -> str:
    """Lines that turn a leading `~/` (or a lone `~`) of each named variable into $HOME."""
    lines = []
    for name in names:
        check_var(name)
        lines.append(
            f'case "${name}" in "~") {name}="$HOME";; "~/"*) {name}="$HOME/${{{name}#"~/"}}";;'
            f" esac\n"
        )
    return "".join(lines)


def task_script(
    env: Mapping[str, str], body: str, *, paths: Iterable[str] = (), job: bool = True
) -> str:
    """The script a job runs (`job`: it lives in its job dir), or a check runs attached."""
    head = _PRELUDE if job else ""
    return (
        head
        + exports(env)
        + home_expansion(paths)
        + _PATH_SETUP
        + "# --- task body ---\n"
        + body.rstrip("\n")
        + "\n"
    )


def check_script(env: Mapping[str, str], check: str, *, paths: Iterable[str] = ()) -> str:
    """A check, attached: `{ ...; } </dev/null`, quiet, its exit status the answer."""
    inner = task_script(env, check, paths=paths, job=False)
    return "{\n" + inner + "} </dev/null >/dev/null 2>&1\n"


def secrets_env(values: Mapping[str, str]) -> str:
    """The secrets as the job's stdin carries them: export lines the prelude evaluates."""
    return exports(values)


def shown(script: str, secrets: Mapping[str, str]) -> str:
    """What a confirmation shows: the script, with each secret as an export line, masked."""
    masked = "".join(f"export {check_var(k)}={MASK}\n" for k in secrets)
    return masked + script
