"""`gpudash completion bash|zsh|fish`: shell completion, with hosts, tags and tasks read from
the config at each TAB.

    eval "$(gpudash completion bash)"          # in ~/.bashrc
    eval "$(gpudash completion zsh)"           # in ~/.zshrc, after compinit
    gpudash completion fish > ~/.config/fish/completions/gpudash.fish

The scripts are thin: each TAB runs `gpudash __complete WORD... CURRENT`, and the candidates
come from here, from the same argparse parser that parses the command (so a new option
completes without touching three shell dialects) and from the config `--config` or the
usual lookup names (so a host added a minute ago completes). A config that does not load
completes no hosts rather than printing an error into the prompt. `@files` / `@dirs` as the
only line tells the shell to complete paths itself.
"""

from __future__ import annotations

import argparse
import fnmatch
from collections.abc import Sequence

from gpudash.cli.errors import ExitCode

SHELLS = ("bash", "zsh", "fish")

# Options whose value is a path, and whether it is a directory.
_PATH_OPTIONS = {"--config": "@files", "-o": "@files", "--output": "@files"}
_DIR_OPTIONS = {"--save": "@dirs", "--replay": "@dirs"}
# What a command's positionals are, in order; the last one repeats.
_POSITIONALS = {
    "probe": ("host",),
    "check": ("host",),
    "report": ("host",),
    "tasks": ("host",),
    "run": ("task", "host"),
    "stop": ("task", "host"),
    "parse": ("kind", "@files"),
    "completion": ("shell",),
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    completion = sub.add_parser(
        "completion", help="print a shell completion script (bash, zsh, fish)"
    )
    completion.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    completion.set_defaults(handler=_completion)


def _completion(args: argparse.Namespace) -> ExitCode:
    import sys

    sys.stdout.write(SCRIPTS[args.shell])
    return ExitCode.OK


def complete(parser: argparse.ArgumentParser, words: Sequence[str]) -> list[str]:
    """The candidates for the last of `words` (the word being typed, maybe empty), the ones
    before it being what the command line already has after `gpudash`."""
    *done, current = words or [""]
    commands = _subparsers(parser)
    command = next((w for w in done if w in commands), None)
    prev = done[-1] if done else None
    here = commands[command] if command else parser
    if prev is not None and (marker := _value_kind(here, prev)) is not None:
        return _candidates(marker, here, prev, done, current)
    if current.startswith("-"):
        return sorted(o for o in _options(here) if o.startswith(current))
    if command is None:
        return sorted(c for c in commands if c.startswith(current) and not c.startswith("_"))
    positionals = _positional_words(here, done[done.index(command) + 1 :])
    kinds = _POSITIONALS.get(command, ())
    if not kinds:
        return []
    kind = kinds[min(len(positionals), len(kinds) - 1)]
    if command in ("report", "tasks", "completion") and positionals:
        return []  # they take one
    if kind == "shell":
        return [s for s in SHELLS if s.startswith(current)]
    if kind == "kind":
        action = next(a for a in here._actions if a.dest == "kind")
        return [c for c in action.choices or () if c.startswith(current)]
    if kind.startswith("@"):
        return [kind]
    return _from_config(kind, done, current, exclude=positionals)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [
        o
        for a in parser._actions
        if a.help is not argparse.SUPPRESS or "--config" in a.option_strings
        for o in a.option_strings
    ]


def _takes_value(parser: argparse.ArgumentParser, option: str) -> argparse.Action | None:
    for action in parser._actions:
        if option in action.option_strings and action.nargs != 0:
            return action
    return None


def _value_kind(parser: argparse.ArgumentParser, prev: str) -> str | None:
    action = _takes_value(parser, prev)
    if action is None:
        return None
    if action.choices:
        return "@choices"
    if prev == "--tag":
        return "tag"
    return _PATH_OPTIONS.get(prev) or _DIR_OPTIONS.get(prev) or "@none"


def _candidates(
    marker: str, parser: argparse.ArgumentParser, prev: str, done: Sequence[str], current: str
) -> list[str]:
    if marker == "@choices":
        action = _takes_value(parser, prev)
        assert action is not None and action.choices is not None
        return [str(c) for c in action.choices if str(c).startswith(current)]
    if marker == "tag":
        return _from_config("tag", done, current)
    if marker == "@none":
        return []
    return [marker]


def _positional_words(parser: argparse.ArgumentParser, words: Sequence[str]) -> list[str]:
    """The words after the command that are positionals (not options nor their values)."""
    out: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = _takes_value(parser, word) is not None and "=" not in word
        else:
            out.append(word)
    return out


def _from_config(
    kind: str, done: Sequence[str], current: str, exclude: Sequence[str] = ()
) -> list[str]:
    """Hosts, tags or tasks of the config the command line names (or the usual lookup)."""
    from gpudash.config.load import load_config

    named = next((done[i + 1] for i, w in enumerate(done[:-1]) if w == "--config"), None)
    try:
        config = load_config(named)
    except Exception:  # a broken config completes nothing; `gpudash check` will say why
        return []
    if kind == "host":
        names = [h.name for h in config.hosts]
    elif kind == "tag":
        names = list(dict.fromkeys(t for h in config.hosts for t in h.tags))
    else:
        names = list(config.tasks)
    taken = set(exclude)
    return [n for n in names if n.startswith(current) and n not in taken] or (
        [n for n in names if fnmatch.fnmatchcase(n, current)] if "*" in current else []
    )


_BASH = r"""# gpudash completion for bash: eval "$(gpudash completion bash)" in ~/.bashrc
_gpudash() {
    local cur=${COMP_WORDS[COMP_CWORD]} IFS=$'\n' out
    out=$(gpudash __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return 0
    case "$out" in
        @files) COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null ;;
        @dirs) COMPREPLY=($(compgen -d -- "$cur")); compopt -o filenames 2>/dev/null ;;
        *) COMPREPLY=($out) ;;
    esac
}
complete -F _gpudash gpudash
"""

_ZSH = r"""#compdef gpudash
# gpudash completion for zsh: eval "$(gpudash completion zsh)" in ~/.zshrc after compinit,
# or save it as _gpudash in a directory of $fpath.
_gpudash() {
    local -a out
    out=("${(@f)$(gpudash __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    [[ -n ${out[1]} ]] || return 1
    case ${out[1]} in
        @files) _files ;;
        @dirs) _files -/ ;;
        *) compadd -Q -- "${out[@]}" ;;
    esac
}
if [[ ${funcstack[1]} == _gpudash ]]; then
    _gpudash "$@"
else
    compdef _gpudash gpudash
fi
"""

_FISH = r"""# gpudash completion for fish:
#   gpudash completion fish > ~/.config/fish/completions/gpudash.fish
function __gpudash_complete
    set -l words (commandline -opc) (commandline -ct)
    set -l out (gpudash __complete $words[2..-1] 2>/dev/null)
    switch "$out[1]"
        case @files
            __fish_complete_path (commandline -ct)
        case @dirs
            __fish_complete_directories (commandline -ct)
        case '*'
            printf '%s\n' $out
    end
end
complete -c gpudash -f -a '(__gpudash_complete)'
"""

SCRIPTS = {"bash": _BASH, "zsh": _ZSH, "fish": _FISH}

__all__ = ["SCRIPTS", "complete", "register"]
