"""The tasks screen (`b`): every run with its state, and the selected run's live log.

Task keys live here (each task's `key` from its config); the config refuses a task key that
this screen or the always-on keys answer (gpudash/config/keys.py). In the host view a task
key that is no key there says where it is (`GpudashApp.on_key`; `s` saves there). The screen
only draws: runs are the app's (gpudash/ui/task_control.py), so closing the screen stops
nothing, here or on the hosts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual.widgets.data_table import ColumnKey

from gpudash.ui import keys
from gpudash.ui.render import remote
from gpudash.ui.task_runs import Run, state_text
from gpudash.ui.widgets.footer import Footer
from gpudash.ui.widgets.log_pane import LogPane

if TYPE_CHECKING:
    from gpudash.tasks.spec import TaskSpec

TICK_S = 1.0
"""How often running rows redraw their elapsed time (only while something runs)."""


def _row_key(run: Run) -> str:
    return f"{run.host}\t{run.task}"


COLUMNS = ("host", "task", "state", "lines", "note")
"""The runs table's columns, in order (their keys are their names)."""


class RunsTable(DataTable[Any]):
    """The runs, with j/k/g/G moving as the arrows do."""

    BINDINGS: ClassVar[list[BindingType]] = keys.moves(
        "cursor_down", "cursor_up", "scroll_top", "scroll_bottom"
    )


class TasksScreen(Screen[None]):
    """Attributes down (the specs, the runs, the hosts a key targets), messages up (a task
    key, a cancel): it never calls the app."""

    @dataclass
    class TaskRequested(Message):
        """A task's key: run it (after its confirmation) on the targets."""

        task: str

    @dataclass
    class CancelRequested(Message):
        """The user confirmed stopping this run."""

        host: str
        task: str

    BINDINGS: ClassVar[list[BindingType]] = keys.bindings(keys.TASKS_KEYS)
    DEFAULT_CSS = """
    TasksScreen { layout: vertical; }
    TasksScreen #tasks-target { height: auto; background: $panel; padding: 0 1; }
    TasksScreen #tasks-menu { height: auto; padding: 0 1; color: $text-muted; }
    TasksScreen #runs {
        height: auto; max-height: 40%;
        border: round $panel-lighten-2; border-title-color: $text-muted;
    }
    TasksScreen #runs:focus { border: round $accent; border-title-color: $text; }
    """

    def __init__(
        self,
        specs: Mapping[str, TaskSpec],
        runs: Mapping[tuple[str, str], Run],
        targets: Sequence[str] = (),
        marked: bool = False,
    ) -> None:
        super().__init__()
        self._specs = specs
        self._runs = runs
        self._drawn: dict[str, tuple[Text, ...]] = {}
        """Each row's cells as last drawn: a redraw touches only the cells that changed."""
        self._targets = (tuple(targets), marked)
        self._shown: tuple[str, str] | None = None
        for name, spec in specs.items():
            if spec.key:
                binding = keys.task_binding(name, spec.key, spec.title, f"run_task('{name}')")
                self._bindings.key_to_bindings.setdefault(binding.key, []).append(binding)

    def compose(self) -> ComposeResult:
        yield Static(id="tasks-target")
        yield Static(self._menu(), id="tasks-menu")
        table = RunsTable(id="runs", cursor_type="row", zebra_stripes=False)
        table.border_title = "Runs"
        yield table
        pane = LogPane(id="task-log")
        pane.border_title = "Log"
        yield pane
        yield Footer()

    def _menu(self) -> Text:
        out = Text()
        for name, spec in self._specs.items():
            if not spec.key:
                continue
            if out:
                out.append("  ")
            out.append(spec.key, style="bold")
            out.append(f" {name}")
        return out or Text("no task has a key: add key = ... to a [tasks.NAME] table")

    def on_mount(self) -> None:
        table = self.query_one("#runs", DataTable)
        for column in COLUMNS:
            table.add_column(column, key=column)
        for run in self._runs.values():
            self._add_row(run)
        self.set_target(*self._targets)
        if self._runs:
            self._select(list(self._runs.values())[-1])
        else:
            self.query_one(LogPane).border_subtitle = "press a task's key to run it"
        table.focus()
        self.set_interval(TICK_S, self._tick)

    # ---- what the app calls ------------------------------------------------------------

    def set_target(self, hosts: Sequence[str], marked: bool = False) -> None:
        """The hosts a task key runs on: the marked ones, else the selected one."""
        target = self.query_one("#tasks-target", Static)
        if not hosts:
            target.update(Text("no host selected", style="dim"))
            return
        words = Text("task keys run on ")
        if len(hosts) == 1 and not marked:
            words.append(remote(hosts[0], style="bold"))
            words.append(" (the selected host; mark hosts with space in the host list)")
        else:
            words.append(f"{len(hosts)} marked host{'s' * (len(hosts) > 1)}: ", style="bold")
            words.append(remote(", ".join(hosts)))
        target.update(words)

    def update_run(self, run: Run, lines: Sequence[str] = (), started: bool = False) -> None:
        """A run changed: its row; and the log pane if it shows that run. A run that
        starts takes the pane over from one that is not running."""
        table = self.query_one("#runs", DataTable)
        if _row_key(run) not in table.rows:
            self._add_row(run)
        elif lines == () or run.state != "running":
            self._redraw_row(run)  # log chunks leave the row to the tick (its line count)
        shown = self.selected_run
        if shown is None or (started and shown.state != "running" and shown is not run):
            self._select(run)
        elif shown is run and started:
            self._show(run)
        elif shown is run and not run.active and not run.lines:
            self._show(run)  # ended with no output: the pane says why (its reason)
        elif shown is run:
            self._pane_title(run)
            self.query_one(LogPane).append(lines, run.partial)

    @property
    def selected_run(self) -> Run | None:
        return self._runs.get(self._shown) if self._shown else None

    # ---- drawing -----------------------------------------------------------------------

    def _cells(self, run: Run) -> tuple[Text, ...]:
        note = remote(run.detail, style="dim") if run.detail else Text("")
        lines = Text(str(run.received) if run.received else "", style="dim")
        return (remote(run.host), Text(run.task), state_text(run), lines, note)

    def _add_row(self, run: Run) -> None:
        cells = self._cells(run)
        self.query_one("#runs", DataTable).add_row(*cells, key=_row_key(run))
        self._drawn[_row_key(run)] = cells

    def _redraw_row(self, run: Run) -> None:
        """Only the cells that changed, and the column measured again only when a cell
        outgrew it: re-measuring every cell of every running row each tick stalled the
        app for about a second with 100 runs (bench/bench_serve_fleet.py)."""
        table = self.query_one("#runs", DataTable)
        key = _row_key(run)
        cells = self._cells(run)
        before = self._drawn.get(key)
        for at, (column, cell) in enumerate(zip(COLUMNS, cells, strict=True)):
            if before is not None and before[at] == cell:
                continue
            drawn = table.columns.get(ColumnKey(column))
            wider = drawn is None or cell.cell_len > drawn.content_width
            table.update_cell(key, column, cell, update_width=wider)
        self._drawn[key] = cells

    def _pane_title(self, run: Run) -> None:
        pane = self.query_one(LogPane)
        pane.set_title(f"Log · {run.host} · {run.task}", live=run.active)
        pane.border_subtitle = state_text(run).plain

    def _select(self, run: Run) -> None:
        table = self.query_one("#runs", DataTable)
        index = table.get_row_index(_row_key(run))
        if table.cursor_row != index:
            table.move_cursor(row=index)
        self._show(run)

    def _show(self, run: Run) -> None:
        self._shown = run.key
        self._pane_title(run)
        lines: Sequence[str] = run.lines
        if not run.lines and not run.partial and not run.active and run.detail:
            lines = [f"{run.state}: {run.detail}"]  # the whole reason, not the note's cut
        self.query_one(LogPane).show_run(lines, run.partial)

    def redraw(self) -> None:
        """Every row again (e.g. a test fixed the clock)."""
        for run in self._runs.values():
            self._redraw_row(run)
        if self.selected_run is not None:
            self._pane_title(self.selected_run)

    def _tick(self) -> None:
        for run in self._runs.values():
            if run.state == "running":
                self._redraw_row(run)
                if run.key == self._shown:
                    self._pane_title(run)

    @on(DataTable.RowHighlighted, "#runs")
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        host, _, task = str(event.row_key.value).partition("\t")
        run = self._runs.get((host, task))
        if run is not None and run.key != self._shown:
            self._show(run)

    # ---- actions -----------------------------------------------------------------------

    def action_run_task(self, name: str) -> None:
        self.post_message(self.TaskRequested(name))

    def action_cancel(self) -> None:
        run = self.selected_run
        if run is None or not run.active:
            self.notify("no running task selected", timeout=2)
            return
        from gpudash.ui.screens.confirm import ConfirmCancel

        asked = [
            key
            for key, found in self._bindings.key_to_bindings.items()
            if any(b.id == "task-cancel" for b in found)
        ]

        def answered(stop: bool | None) -> None:
            if stop and run.active:
                self.post_message(self.CancelRequested(run.host, run.task))
                self.call_after_refresh(self._redraw_row, run)  # "cancelling", once handled

        self.app.push_screen(ConfirmCancel(run.host, run.task, asked), answered)

    def action_close(self) -> None:
        self.dismiss(None)
