"""The app's side of tasks: the keys' targets, the tasks screen, marks, confirm, launch,
follow, cancel, and re-probe what a task changed.

Every run is an async worker owned by the App (group `task:HOST`), so closing the tasks
screen stops nothing. A worker iterates the core's stream (`run_on_host`, or `follow_job`
for a job found running after a restart) and posts each event as a `TaskEvent`; the app's
handler calls `TaskControl.on_event`, which folds it into `runs` and redraws. Quitting
cancels the workers, which closes the channels; the jobs go on, detached, on the hosts.

The app makes one at start-up; the task core (runner, prepare, the specs) is imported on
first use, not on the first frame's path.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.text import Text
from textual.css.query import NoMatches

from gpudash.model import HostState
from gpudash.tasks import events as ev
from gpudash.ui.messages import TaskEvent
from gpudash.ui.render import remote
from gpudash.ui.task_runs import EarlierRun, Run, fold

if TYPE_CHECKING:
    from gpudash.config.model import HostConfig
    from gpudash.tasks.kinds import HostGroup
    from gpudash.tasks.prepare import Facts
    from gpudash.tasks.spec import TaskSpec
    from gpudash.transport.base import Transport
    from gpudash.ui.task_host import Reprobe, TaskHost


class TaskControl:
    """Sees the app only through `TaskHost`, and has the hosts a task changed probed again
    through `reprobe` (`ProbeRouter.reprobe`)."""

    def __init__(self, host: TaskHost, reprobe: Reprobe) -> None:
        self.app = host
        self._reprobe = reprobe
        self._specs: Mapping[str, TaskSpec] | None = None
        self.runs: dict[tuple[str, str], Run] = {}
        self._cancels: dict[tuple[str, str], asyncio.Event] = {}
        self._looked: set[str] = set()

    @property
    def specs(self) -> Mapping[str, TaskSpec]:
        """The config's tasks (built-ins merged), loaded on first use."""
        if self._specs is None:
            from gpudash.tasks.spec import load_tasks

            self._specs = self.app.config.tasks or load_tasks()
        return self._specs

    # ---- keys, marks and the tasks screen --------------------------------------------------

    def targets(self) -> list[str]:
        """Marked hosts in config order, else the selected host."""
        host = self.app
        if host.marked:
            return [name for name in host.order if name in host.marked]
        return [host.selected] if host.selected else []

    def task_for_key(self, key: str) -> str | None:
        """The task whose configured key is `key` (Textual's name for it), if any."""
        for name, spec in self.specs.items():
            if spec.key and key in spec.key.split(","):
                return name
        return None

    def toggle_screen(self) -> None:
        """Open the tasks screen, or close it when it is the one on top."""
        from gpudash.ui.screens.tasks import TasksScreen

        if isinstance(self.app.screen, TasksScreen):
            self.app.screen.dismiss(None)
            return
        targets = self.targets()
        self.app.push_screen(TasksScreen(self.specs, self.runs, targets, bool(self.app.marked)))

    def mark(self) -> None:
        """Mark the selected host, or unmark it."""
        host = self.app
        if host.selected is None:
            return
        host.marked.symmetric_difference_update({host.selected})
        host.host_list.set_marked(host.marked)

    # ---- launching -------------------------------------------------------------------------

    def request(
        self, task: str, hosts: list[str] | None = None, params: Mapping[str, str] | None = None
    ) -> None:
        """Show what `task` (and what it needs) would run on `hosts` (default: `targets`);
        run it on yes."""
        from gpudash.tasks.refusals import refusal
        from gpudash.tasks.spec import order
        from gpudash.ui.screens.confirm import ConfirmTask, plan_text

        hosts = hosts if hosts is not None else self.targets()
        if task not in self.specs:
            self.app.notify(f"no task {task!r}", severity="error")
            return
        specs = self._with_params(task, params)
        chain = order(specs, [task])
        busy = [h for h in hosts if any(self._active(h, t) for t in chain)]
        hosts = [h for h in hosts if h not in busy]
        for host in busy:
            self.app.notify(f"{host}: {task} (or what it needs) is running already", timeout=3)
        refused = {h: why for h in hosts if (why := refusal(specs, [task], self._facts(h)))}
        for host, why in refused.items():  # before the confirmation: nothing to say yes to
            self.app.notify(f"{host}: {task} not run: {why}", severity="error", timeout=8)
        hosts = [h for h in hosts if h not in refused]
        if not hosts:
            return
        what = Text.assemble(
            ("Run ", ""),
            (" -> ".join(chain), "bold"),
            (" on ", ""),
            remote(", ".join(hosts), style="bold"),
            ("\nA task whose check says it is done already is skipped. ", "dim"),
            ("It runs detached: quitting gpudash leaves it running.", "dim"),
        )
        for host in hosts:
            result = self.app.results.get(host)
            if result is not None and result.state is HostState.FAILED:
                what.append("\n⚠ ", style="bold yellow")
                what.append(remote(host, style="bold"))
                what.append(" did not answer its last probe (", style="yellow")
                why = (result.error or "no reason given").removeprefix(f"{host}: ")
                what.append(remote(why))
                what.append("): the task will fail unless it answers now", style="yellow")
        script = plan_text(specs, chain, [(h, self._facts(h)) for h in hosts])

        def answered(yes: bool | None) -> None:
            if yes:
                self.launch(task, hosts, specs)

        self.app.push_screen(ConfirmTask(what, script), answered)

    def _with_params(self, task: str, params: Mapping[str, str] | None) -> Mapping[str, TaskSpec]:
        """The specs, with a fix's parameters (e.g. the model's repo) over the task's own."""
        if not params:
            return self.specs
        spec = self.specs[task]
        known = {k: v for k, v in params.items() if k in spec.params}
        return {**self.specs, task: dataclasses.replace(spec, params={**spec.params, **known})}

    def _facts(self, host: str) -> Facts | None:
        from gpudash.tasks.prepare import Facts

        result = self.app.results.get(host)
        facts = Facts.from_result(result)
        return facts if facts.known else None

    def _active(self, host: str, task: str) -> bool:
        run = self.runs.get((host, task))
        return run is not None and run.active

    def launch(self, task: str, hosts: list[str], specs: Mapping[str, TaskSpec]) -> None:
        """Run `task` and its needs on each host, each host in its own worker; a direct copy
        to several marked hosts is one fan-out (fed once by its source), as on the CLI."""
        from gpudash.tasks.kinds import run_groups
        from gpudash.tasks.spec import order

        configs = list(self.app.fleet.hosts(hosts))
        groups = run_groups(specs, order(specs, [task]), [c.name for c in configs])
        for config in configs:
            cancel = asyncio.Event()
            for name in order(specs, [task]):
                self._cancels[(config.name, name)] = cancel
            self.app.run_worker(
                self._run(config, specs, task, cancel, groups),
                name=f"task {task} on {config.name}",
                group=f"task:{config.name}",
                description=f"Running {task} on {config.name}",
                exit_on_error=False,
            )

    async def _run(
        self,
        host: HostConfig,
        specs: Mapping[str, TaskSpec],
        task: str,
        cancel: asyncio.Event,
        groups: Mapping[str, HostGroup],
    ) -> None:
        from gpudash.tasks import fleet_run

        try:
            transport = self.app.fleet.transport(host)
            async for event in fleet_run.run_on_host(
                host,
                transport,
                specs,
                [task],
                cancel=cancel,
                facts=self._facts(host.name),
                peer=fleet_run.fleet_peer(self.app.fleet),  # a copy's source host
                groups=groups,
            ):
                self.app.post_message(TaskEvent(event))
        except Exception as exc:  # a bug costs this run, never the app
            reason = f"internal error: {type(exc).__name__}: {exc}"
            self.app.post_message(TaskEvent(ev.TaskLost(host.name, task, reason)))
        finally:  # a host that never reached its copy (a need failed) must not hold the rest
            for group in groups.values():
                group.withdraw(host.name)

    def cancel(self, host: str, task: str) -> None:
        """Stop the run (the core kills its process group on the host) and what was queued
        behind it in the same launch."""
        event = self._cancels.get((host, task))
        run = self.runs.get((host, task))
        if event is None or run is None or not run.active:
            return
        run.cancelling = True
        event.set()

    # ---- after a restart ---------------------------------------------------------------------

    def find_jobs(self, host: str) -> None:
        """Once per host, after its first probe: follow the jobs still running there."""
        if host in self._looked:
            return
        self._looked.add(host)
        config = self.app.config.host(host)
        if config is None or config.transport == "replay":
            return
        self.app.run_worker(
            self._find(config),
            name=f"jobs on {host}",
            group=f"jobs:{host}",
            description=f"Looking for running tasks on {host}",
            exit_on_error=False,
        )

    async def _find(self, host: HostConfig) -> None:
        from gpudash.tasks import jobs
        from gpudash.transport.base import TransportError

        transport = self.app.fleet.transport(host)
        try:
            found = await jobs.list_jobs(transport)
        except (TransportError, OSError):
            return
        for job in found:
            if job.done and (host.name, job.task) not in self.runs:
                state = (
                    job.state if job.state != "finished" else ("ok" if job.rc == 0 else "failed")
                )
                earlier = EarlierRun(host.name, job.task, state, job.rc, job.run)
                self.app.post_message(TaskEvent(earlier))
                continue
            if job.state != "running" or self._active(host.name, job.task):
                continue
            cancel = asyncio.Event()
            self._cancels[(host.name, job.task)] = cancel
            self.app.run_worker(
                self._follow(host.name, transport, job.task, job.run, cancel),
                name=f"follow {job.task} on {host.name}",
                group=f"task:{host.name}",
                exit_on_error=False,
            )

    async def _follow(
        self, host: str, transport: Transport, task: str, run: str | None, cancel: asyncio.Event
    ) -> None:
        from gpudash.tasks import runner
        from gpudash.tasks.prepare import configured_secrets

        self.app.post_message(TaskEvent(ev.TaskQueued(host, task)))
        try:
            # Which task's secrets this run had is not known here: mask every one configured.
            secrets = configured_secrets(self.specs.values())
            follow = runner.follow_job(
                host, transport, task, run=run, cancel=cancel, secrets=secrets
            )
            async for event in follow:
                self.app.post_message(TaskEvent(event))
        except Exception as exc:
            reason = f"internal error: {type(exc).__name__}: {exc}"
            self.app.post_message(TaskEvent(ev.TaskLost(host, task, reason)))

    # ---- events ---------------------------------------------------------------------------------

    def on_event(self, event: ev.TaskEvent | EarlierRun) -> None:
        """Fold one event (the app's `TaskEvent` handler hands it over) and show it."""
        if self.app.quitting or not self.app.screen_stack:
            return
        run, lines, started = self.fold(event)
        running = {host for (host, _), r in self.runs.items() if r.active}
        self.app.host_list.set_running(running)
        from gpudash.ui.screens.tasks import TasksScreen

        for screen in self.app.screen_stack:
            if isinstance(screen, TasksScreen):
                with contextlib.suppress(NoMatches):  # a screen being torn down
                    screen.update_run(run, lines, started)

    def fold(self, event: ev.TaskEvent | EarlierRun) -> tuple[Run, tuple[str, ...], bool]:
        """Fold one event; the run, the lines it added, and whether it just started."""
        key = (event.host, event.task)
        run = self.runs.get(key)
        if run is None:
            run = self.runs[key] = Run(event.host, event.task)
        fold(run, event)
        lines = event.lines if isinstance(event, ev.TaskOutput) else ()
        if isinstance(event, (ev.TaskFinished, ev.TaskCancelled)) and run.started is not None:
            affects = getattr(event, "affects", ()) or None
            self._reprobe(event.host, affects)
        return run, lines, isinstance(event, ev.TaskStarted)
