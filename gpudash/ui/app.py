"""The gpudash app: composition, selection and keys; no I/O of its own.

The probe workers and the routing of their events are the `ProbeRouter`'s it owns
(`probing`, gpudash/ui/probing.py), the task keys and runs the `TaskControl`'s (`tasks`,
gpudash/ui/task_control.py); each sees the app only through its Protocol (`ProbeHost`,
`TaskHost`), which this class satisfies. Screens and panels never call the app: they post
messages (a task requested, a run to cancel) that the handlers here route with `@on`, and
get what they show as attributes (the targets, the keymap) when they are made.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Input, Static

from gpudash.config.model import Config
from gpudash.fleet import Fleet
from gpudash.headstart import HeadStart
from gpudash.model import HostResult, ProbeFinished
from gpudash.ui import keys
from gpudash.ui.data_age import probed_words, refresh_words
from gpudash.ui.messages import ProbeEvent, TaskEvent
from gpudash.ui.panels.base import Panel
from gpudash.ui.panels.findings import FindingsPanel
from gpudash.ui.panels.topology import TopologyPanel
from gpudash.ui.probing import HeapSettler, ProbeRouter
from gpudash.ui.screens.main import MainScreen
from gpudash.ui.screens.tasks import TasksScreen
from gpudash.ui.shutdown import stop_io
from gpudash.ui.task_control import TaskControl
from gpudash.ui.widgets.fleet_rows import FleetRows
from gpudash.ui.widgets.footer import Footer
from gpudash.ui.widgets.host_list import HostList
from gpudash.ui.widgets.host_view import HostView

if TYPE_CHECKING:
    from gpudash.ui.screens.fleet import FleetScreen

QUIT_BUDGET_S = 0.8
"""How long quitting waits for probes to stop and connections to close (the promise is 1 s)."""

DEFAULT_THEME = "textual-dark"

AGE_TICK_S = 1.0
"""How often "probed N s ago" is worded again (a repaint only when the words changed)."""


def _ui(config: Config, name: str, default: Any) -> Any:
    ui = getattr(config, "ui", None)
    value = getattr(ui, name, None) if ui is not None else None
    return default if value is None else value


class GpudashApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "gpudash"
    BINDINGS: ClassVar[list[BindingType]] = [
        *keys.bindings(keys.APP_KEYS),
        *(Binding(n, f"jump_panel({n})", show=False) for n in keys.PANEL_JUMPS),
    ]
    # Textual's App declares it an instance attribute: not a ClassVar here
    HORIZONTAL_BREAKPOINTS: list[tuple[int, str]] | None = [  # noqa: RUF012
        (0, "-narrow"),
        (90, "-normal"),
        (150, "-wide"),
    ]

    def __init__(
        self,
        config: Config,
        *,
        theme: str | None = None,
        refresh_s: float | None = None,
        save_dir: str | Path | None = None,
        probe_on_start: bool = True,
        fleet: Fleet | None = None,
        head_start: HeadStart | None = None,
        gc_paused: bool = False,
        **kw: Any,
    ) -> None:
        """`fleet` and `head_start` come from `run_app`, which begins the first rounds
        before this module is even imported; the first worker of each host takes its round
        over instead of starting another. `gc_paused`: `run_app` turned the collector off
        for start-up, and the first settle turns it back on (`HeapSettler`)."""
        super().__init__(**kw)
        if self.no_color:
            from gpudash.ui.no_color import use_severity_monochrome

            use_severity_monochrome(self._filters)
        self.config = config
        self.fleet = fleet or Fleet(config)
        self._head_start = head_start
        self.heap = HeapSettler(paused=gc_paused)
        self.results: dict[str, HostResult] = {h.name: HostResult(h.name) for h in config.hosts}
        self.order = [h.name for h in config.hosts]
        self.selected: str | None = self.order[0] if self.order else None
        self.refresh_s = float(refresh_s if refresh_s is not None else _ui(config, "refresh_s", 0))
        self.save_dir = Path(save_dir or _ui(config, "save_dir", "gpudash-saved"))
        self.probe_on_start = probe_on_start
        self.marked: set[str] = set()
        self.clock = time.monotonic
        """What "probed 12 s ago" is measured on (tests and snapshots pin it)."""
        self.probed_at: dict[str, float] = {}
        """When each host's last round ended, on `clock`."""
        self._age_words = ""
        self._theme_name = theme or _ui(config, "theme", None) or DEFAULT_THEME
        self.quitting = False
        self.probing = ProbeRouter(self, self.heap, head_start)
        self.tasks = TaskControl(self, self.probing.reprobe)
        self.key_remap: dict[str, str] = keys.keymap(dict(getattr(config, "keys", None) or {}))
        """Key ids remapped by the config's [keys] (`refresh-host = "F5"`), handed down to
        what shows a key (the help, the topology panel's NIC key)."""

    # ---- composition -------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        return MainScreen(id="_default")

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="sidebar"):
                yield HostList(self.config.hosts, self.results, id="hosts")
                yield Static("", id="data-age")
            yield HostView(id="host-view")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.theme = self._theme_name
        if self.key_remap:
            self.set_keymap(self.key_remap)
        for panel in self.query(TopologyPanel):
            panel.nic_key = self.key_remap.get("toggle-nics", panel.nic_key)
        for findings in self.query(FindingsPanel):
            findings.config = self.config
        self._show_selected()
        self.query_one(HostList).focus()
        if self.heap.paused:
            self.set_timer(self.heap.STARTUP_S, self.heap.end_pause)
        if self.probe_on_start:
            self.probing.probe(self.order)
        self.set_interval(AGE_TICK_S, self._show_age)

    @property
    def host_list(self) -> HostList:
        return self.screen_stack[0].query_one(HostList)

    @property
    def host_view(self) -> HostView:
        return self.screen_stack[0].query_one(HostView)

    # ---- selection and filter ----------------------------------------------------------

    @on(HostList.Selected)
    def _host_selected(self, message: HostList.Selected) -> None:
        if message.host != self.selected:
            self.selected = message.host
            self._show_selected()

    def _show_selected(self) -> None:
        if self.selected is not None:
            self.host_view.show(self.results[self.selected])
        self._show_age()

    def _show_age(self) -> None:
        """The selected host's data age and the refresh setting, under the host list."""
        if not self.screen_stack or self.selected is None:
            return
        words = (
            f"{probed_words(self.probed_at.get(self.selected), self.clock())}\n"
            f"{refresh_words(self.refresh_s)}"
        )
        found = self.screen_stack[0].query("#data-age")
        if found and words != self._age_words:
            self._age_words = words
            found.first(Static).update(words)

    def select_host(self, name: str) -> None:
        self.host_list.select_host(name)
        self.selected = name
        self._show_selected()

    @property
    def filter_box(self) -> Input | None:
        """The filter's input, once `/` has made it (not on the first frame's path)."""
        found = self.screen_stack[0].query("#filter")
        return found.first(Input) if found else None

    async def action_filter(self) -> None:
        box = self.filter_box
        if box is None:
            box = Input(placeholder="filter: name or tag", id="filter", compact=True)
            await self.screen_stack[0].query_one("#sidebar").mount(box, before=self.host_list)
        box.display = True
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.host_list.set_filter(event.value)
        current = self.host_list.highlighted_host
        if current is not None and current != self.selected:
            self.selected = current
            self._show_selected()

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self.host_list.focus()

    def key_escape(self) -> None:
        box = self.filter_box
        if self.screen.maximized is not None:
            self.screen.minimize()
        elif box is not None and box.display:
            box.value = ""
            box.display = False
            self.host_list.set_filter("")
            self.host_list.focus()

    # ---- probes (`ProbeHost`: the router's way into the app) ----------------------------

    def on_probe_event(self, message: ProbeEvent) -> None:
        if self.screen_stack:  # not once the app is closing
            if isinstance(message.event, ProbeFinished):
                self.probed_at[message.event.host] = self.clock()
                if message.event.host == self.selected:
                    self.call_later(self._show_age)
            self.probing.on_event(message.event)

    def show_hosts(self, hosts: set[str]) -> None:
        """Show each host's newest snapshot in the host list, the host view (the selected
        host), the fleet view's rows, and any fleet screen open."""
        if not self.screen_stack:
            return
        try:
            host_list = self.host_list
        except NoMatches:  # the app is closing (a re-probe after a task ended late)
            return
        fleets = self._fleet_screens()
        rows = FleetRows.of(self)  # the fleet view opens on values made here
        for host in hosts:
            snapshot = self.results[host]
            rows.update(snapshot)
            host_list.update_host(snapshot)
            if host == self.selected:
                self.host_view.show(snapshot)
            for screen in fleets:
                screen.update_host(snapshot)

    def _fleet_screens(self) -> list[FleetScreen]:
        stack = self.screen_stack
        if len(stack) < 2:
            return []  # the host screen alone (and the fleet module maybe not imported yet)
        from gpudash.ui.screens.fleet import FleetScreen

        return [s for s in stack if isinstance(s, FleetScreen)]

    def host_ready(self, host: str) -> None:
        self.tasks.find_jobs(host)

    # ---- tasks (`TaskControl`; screens and panels post, the handlers here route) ----------

    def request_task(
        self, task: str, params: Mapping[str, str] | None = None, hosts: list[str] | None = None
    ) -> None:
        """Ask to run `task` (with a fix's `params`) on `hosts` (default: the targets)."""
        self.tasks.request(task, hosts, params)

    @on(TasksScreen.TaskRequested)
    def _task_requested(self, message: TasksScreen.TaskRequested) -> None:
        self.request_task(message.task)

    @on(FindingsPanel.FixRequested)
    def _fix_requested(self, message: FindingsPanel.FixRequested) -> None:
        self.request_task(message.task, message.params, [message.host])

    @on(TasksScreen.CancelRequested)
    def _cancel_requested(self, message: TasksScreen.CancelRequested) -> None:
        self.tasks.cancel(message.host, message.task)

    def action_tasks(self) -> None:
        self.tasks.toggle_screen()

    def action_mark(self) -> None:
        self.tasks.mark()

    def on_task_event(self, message: TaskEvent) -> None:
        self.tasks.on_event(message.event)

    def on_key(self, event: events.Key) -> None:
        """A task's key pressed in the host view, where it is no key: say where it is (the
        tasks screen, `b`) instead of doing nothing. Only keys nothing else took reach here;
        a host-view key keeps its one meaning there (`s` saves), so none is shadowed."""
        if self.screen is not self.screen_stack[0] or isinstance(self.focused, Input):
            return
        if event.key in self.screen.active_bindings:  # the host view's own key (Textual
            return  # calls this handler even after a binding took the key)
        name = self.tasks.task_for_key(event.key)
        if name is not None:
            event.stop()
            opens = [
                self.get_key_display(active.binding)
                for active in self.screen.active_bindings.values()
                if active.binding.action == "tasks"
            ]
            where = f"press {opens[0]}, then {event.key}" if opens else "open it from ^p"
            self.notify(f"{event.key} runs {name} on the tasks screen: {where}", timeout=4)

    # ---- actions -----------------------------------------------------------------------

    MAIN_ONLY = frozenset({"filter", "expand", "save", "mark", "jump_panel", "leave_panel"})
    """Actions that act on the host view, so they are off while another screen is on top."""

    HOST_ACTIONS = frozenset({"refresh_host", "refresh_all", "fleet", "tasks"})
    """Off in the tasks screen too, where the footer belongs to the tasks' own keys."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.HOST_ACTIONS and type(self.screen).__name__ == "TasksScreen":
            return False
        return not (action in self.MAIN_ONLY and self.screen is not self.screen_stack[0])

    def action_refresh_host(self) -> None:
        if self.selected is None:
            return
        if not self.probing.probe([self.selected]):
            self.notify(f"{self.selected} is being probed already", timeout=2)

    def action_refresh_all(self) -> None:
        started = self.probing.probe(self.order)
        skipped = len(self.order) - len(started)
        if skipped:
            self.notify(f"{skipped} host(s) still probing: left running", timeout=2)

    def action_fleet(self) -> None:
        from gpudash.ui.screens.fleet import (
            FleetScreen,  # on first use: not on the first frame's path
        )

        if isinstance(self.screen, FleetScreen):
            self.screen.dismiss(None)
            return
        self.push_screen(FleetScreen(self.order, self.results), self._fleet_closed)

    def _fleet_closed(self, host: str | None) -> None:
        if host is not None and host in self.results:
            self.select_host(host)

    def action_jump_panel(self, number: int) -> None:
        """`1`..`9`: focus the host view's Nth panel (as drawn: Findings is 1)."""
        panels = [p for p in self.screen.query(Panel) if p.display]
        if 1 <= number <= len(panels):
            panels[number - 1].focus()

    def action_leave_panel(self) -> None:
        """`esc` in a panel: restore it if it is full screen, else back to the host list."""
        if self.screen.maximized is not None:
            self.screen.minimize()
        else:
            self.host_list.focus()

    def action_expand(self) -> None:
        focused = self.screen.focused
        if isinstance(focused, Input):
            return
        if self.screen.maximized is not None:
            self.screen.minimize()
        else:
            panel = focused if isinstance(focused, Panel) else None
            if panel is None:
                panel = self.query(Panel).first()
                panel.focus()
            self.screen.maximize(panel, container=False)

    def describe_binding(self, binding: Binding) -> str:
        """The footer's word for a key as things stand (`Footer`; `MainScreen` asks for it
        again when a panel is maximized or restored)."""
        if binding.action == "expand" and self.screen.maximized is not None:
            return "Restore"
        return binding.description

    def action_save(self) -> None:
        from gpudash.saved import save_host

        if self.selected is None:
            return
        result = self.results[self.selected]
        if not result.sections:
            self.notify(f"nothing to save for {result.name} yet", severity="warning")
            return
        try:
            path = save_host(self.save_dir, result)
        except OSError as exc:
            self.notify(f"could not save: {exc.strerror or exc}", severity="error")
            return
        self.notify(f"saved {result.name} to {path}", timeout=4)

    def action_help(self) -> None:
        from gpudash.ui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.key_remap, self.tasks.specs))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        for k in keys.APP_KEYS:
            if k.action.startswith("app."):
                continue
            yield SystemCommand(k.description, k.tooltip, getattr(self, f"action_{k.action}"))
        for name, spec in self.tasks.specs.items():  # each asks first, like its key
            yield SystemCommand(
                f"Task: {name}", spec.title, functools.partial(self.request_task, name)
            )
        yield from super().get_system_commands(screen)

    async def action_quit(self) -> None:
        """Stop every probe (their remote processes are killed as the streams close), close
        the connections, and exit; never longer than QUIT_BUDGET_S."""
        if self.quitting:
            return
        self.quitting = True
        closers = [self.fleet.close]
        if self._head_start is not None:
            closers.insert(0, self._head_start.close)
        await stop_io(self.workers, closers, QUIT_BUDGET_S)
        self.exit(0)

    def action_help_quit(self) -> None:
        """ctrl+c quits (Textual's default only says how to)."""
        self.run_worker(self.action_quit(), group="quit", exit_on_error=False)

    async def on_unmount(self) -> None:
        self.heap.release()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.fleet.close(), QUIT_BUDGET_S)
