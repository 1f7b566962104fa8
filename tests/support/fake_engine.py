"""A fake serving venv for tests: `VENV/bin/python -m sglang.launch_server ...`,
`VENV/bin/vllm serve ...` and `VENV/bin/transformers serve ...` run fake_engine_run.py, which
replays a recorded engine log and then serves, fails or hangs (see its docstring).

SGLang and vLLM cannot be installed in CI (no GPU, wheels of hundreds of MB): their adapters
are tested against these replays of real logs from public bug reports (tests/fixtures/serve).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

MODES = ("ok", "no_generate", "exit", "hang")
ENGINES = ("sglang", "vllm", "transformers")
RUNNER = Path(__file__).with_name("fake_engine_run.py")


def make_fake_venv(
    dir: Path,
    engine: str,
    log: Path,
    *,
    serve: str = "ok",
    speed: float = 500.0,
) -> Path:
    """Create a fake serving venv at `dir` (returned) for `engine`, replaying `log` at `speed`
    lines per second (0: as fast as it can), then behaving per `serve` (one of MODES).

    VENV/bin/python is a sh wrapper that execs this test run's Python with the fake `sglang`
    package first on its path; VENV/bin/vllm and VENV/bin/transformers exec it on the runner.
    """
    if engine not in ENGINES or serve not in MODES:
        raise ValueError(f"fake engine: engine {engine!r} / serve {serve!r} unknown")
    lib = dir / "lib" / "fake"
    (lib / "sglang").mkdir(parents=True, exist_ok=True)
    (dir / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(RUNNER, lib / "fake_engine_run.py")
    (lib / "fake_engine.json").write_text(
        json.dumps({"log": str(Path(log).resolve()), "serve": serve, "speed": speed})
    )
    (lib / "sglang" / "__init__.py").write_text("")
    (lib / "sglang" / "launch_server.py").write_text(
        "import sys\nimport fake_engine_run\n\n"
        "if __name__ == '__main__':\n    fake_engine_run.main(['sglang', *sys.argv[1:]])\n"
    )
    q = shlex.quote
    python = dir / "bin" / "python"
    _script(
        python,
        f'PYTHONPATH={q(str(lib))}${{PYTHONPATH:+:$PYTHONPATH}} exec {q(sys.executable)} "$@"',
    )
    for name in ("vllm", "transformers"):
        _script(dir / "bin" / name, f'exec {q(str(python))} -m fake_engine_run {name} "$@"')
    (dir / "bin" / "python3").unlink(missing_ok=True)
    os.symlink("python", dir / "bin" / "python3")
    return dir


def _script(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
