"""The fleet view's table: keys move a row cursor that stays on screen, headers sort, clicks
open, column widths follow the cells, cells are drawn as text, and only rows on screen are
drawn (what keeps opening the view with 1000 hosts fast: python -m bench.bench_scale `app`)."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult

from gpudash.config.model import Config, HostConfig
from gpudash.ui import create_app
from gpudash.ui.app import GpudashApp
from gpudash.ui.screens.fleet import FleetScreen
from gpudash.ui.widgets.fleet_columns import COLUMNS
from gpudash.ui.widgets.fleet_table import FleetTable, fit_widths
from tests.app.test_app import FIVE, SAVED, SIZE, replay_config, settled, until


def screen_lines(app: App[object]) -> list[str]:
    return [s.text for s in app.screen._compositor.render_strips(app.screen.size)]


def many(n: int) -> Config:
    return Config(
        None,
        tuple(
            HostConfig(name=f"h{i:02d}", transport="replay", replay_dir=str(SAVED / "h200-1x"))
            for i in range(n)
        ),
    )


async def open_fleet(app: GpudashApp, pilot) -> tuple[FleetScreen, FleetTable]:  # type: ignore[no-untyped-def]
    await until(pilot, settled(app))
    await pilot.press("f")
    await until(pilot, lambda: isinstance(app.screen, FleetScreen))
    fleet = app.screen
    assert isinstance(fleet, FleetScreen)
    await pilot.pause()
    return fleet, fleet.query_one(FleetTable)


def on_screen(app: App[object], host: str) -> bool:
    return any(line.lstrip().startswith(f"{host} ") for line in screen_lines(app)[2:-1])


async def test_keys_move_the_cursor_and_the_view_keeps_it_on_screen() -> None:
    app = create_app(many(60))
    async with app.run_test(size=SIZE) as pilot:
        fleet, table = await open_fleet(app, pilot)
        assert fleet.rows == [f"h{i:02d}" for i in range(60)]
        assert len(table._drawn) < SIZE[1]  # only the rows on screen were ever built
        await pilot.press("end")
        assert table.cursor_row == 59 and table.cursor_key == "h59"
        assert on_screen(app, "h59") and not on_screen(app, "h00")
        await pilot.press("home")
        assert table.cursor_row == 0 and on_screen(app, "h00")
        await pilot.press("pagedown")
        page = table.cursor_row
        assert page > 10
        assert on_screen(app, f"h{page:02d}")
        await pilot.press("pagedown", "down")
        assert table.cursor_row == 2 * page + 1 and on_screen(app, f"h{2 * page + 1:02d}")
        await pilot.press("pageup", "up")
        assert table.cursor_row == page and on_screen(app, f"h{page:02d}")
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, FleetScreen))
        assert app.selected == f"h{page:02d}"


async def test_clicking_a_header_sorts_and_clicking_the_cursor_row_opens_the_host() -> None:
    app = create_app(replay_config(*FIVE))
    async with app.run_test(size=SIZE) as pilot:
        fleet, table = await open_fleet(app, pilot)
        widths = table.shown_widths
        gpus_x = sum(w + 1 for w in widths[:2]) + 1
        await pilot.click(FleetTable, offset=(gpus_x, 0))
        assert fleet._sort == 2
        assert "sorted by GPUs" in screen_lines(app)[0]
        gpus = [fleet.cell(name, "gpus").plain for name in fleet.rows]
        assert gpus == sorted(gpus, key=lambda v: (v == "–", v.lower()))
        assert table.cursor_key == FIVE[0]  # the cursor stayed on its host
        row = 0 if table.cursor_row else 1
        other = fleet.rows[row]
        await pilot.click(FleetTable, offset=(2, row + 1))  # the first click moves the cursor
        assert table.cursor_key == other and isinstance(app.screen, FleetScreen)
        await pilot.click(FleetTable, offset=(2, row + 1))  # a second one opens the host
        await until(pilot, lambda: not isinstance(app.screen, FleetScreen))
        assert app.selected == other


class TableApp(App[None]):
    def __init__(self, cells: dict[str, list[Text]]) -> None:
        super().__init__()
        self.cells = cells

    def compose(self) -> ComposeResult:
        yield FleetTable([Text("name"), Text("value")], lambda key: self.cells[key])


async def test_column_widths_follow_the_cells_as_they_change_and_cells_stay_text() -> None:
    cells = {
        "a": [Text("a"), Text("[bold]not markup[/bold]")],
        "b": [Text("b"), Text("short")],
    }
    app = TableApp(cells)
    async with app.run_test(size=(60, 10)) as pilot:
        table = app.query_one(FleetTable)
        table.set_rows((key, [c.cell_len for c in row]) for key, row in cells.items())
        await pilot.pause()
        assert table.column_widths == [4, len("[bold]not markup[/bold]")]
        assert "[bold]not markup[/bold]" in screen_lines(app)[1]

        cells["a"][1] = Text("x")  # the widest cell shrinks: the column follows
        table.set_row("a", [1, 1])
        await pilot.pause()
        assert table.column_widths == [4, 5]
        assert screen_lines(app)[1].rstrip() == " a    x"

        cells["b"][1] = Text("a much longer value")
        table.set_row("b", [1, 4])  # told less than the cell needs: the cell is cut
        await pilot.pause()
        assert table.column_widths == [4, 5]  # the header's own width counts
        assert screen_lines(app)[0].rstrip() == " name value"
        assert screen_lines(app)[2].rstrip() == " b    a mu…"


def test_fit_widths_cuts_the_widest_columns_level_and_never_below_a_floor() -> None:
    widths, floors = [5, 28, 12, 20], [None, 11, 8, 10]
    assert fit_widths(widths, floors, 100) == widths  # room enough: as measured
    fitted = fit_widths(widths, floors, 60)
    assert fitted == [5, 20, 12, 19]  # the two widest, cut level; the rest untouched
    assert sum(fitted) + len(fitted) == 60
    assert fit_widths(widths, floors, 10) == [5, 11, 8, 10]  # floors hold; the rest scrolls
    assert fit_widths(widths, [None] * 4, 10) == widths  # nothing may give: it all scrolls


async def test_the_fleet_view_fits_every_column_into_100_columns() -> None:
    app = create_app(replay_config(*FIVE))
    async with app.run_test(size=SIZE) as pilot:
        fleet, table = await open_fleet(app, pilot)
        lines = screen_lines(app)
        header = lines[1].split()
        base = [c.label for c in COLUMNS if not c.extra]
        assert header == " ".join(base).split()  # all ten, none scrolled off, no extra one
        assert table.virtual_size.width <= SIZE[0]
        row = {name: lines[2 + i] for i, name in enumerate(fleet.rows)}
        # cc and driver/CUDA whole (they tell GPUs apart); NVLink gives way first
        assert "NV18 · al" in row["dgx-h200"] and " sm_90 " in row["dgx-h200"]
        assert "580.159.04/13.0 " in row["dgx-h200"]
        assert "PCIe · SYS" in row["pcie-a40"] and "1 GPU" in row["h200-1x"]
        assert row["dgx-h200"].rstrip().endswith("0/1 ok  ok")  # the last two columns, whole
        assert "unreachabl…" in row["down"]  # its reason gave way (the red ✖ row says the rest)

        await pilot.resize_terminal(160, 30)  # room again: nothing is cut
        down = 2 + fleet.rows.index("down")
        await until(pilot, lambda: "unreachable: connection refused" in screen_lines(app)[down])
        shown = table.shown_widths
        assert [w for w in shown if w is not None] == [
            w for w, s in zip(table.column_widths, shown, strict=True) if s is not None
        ]


async def test_cc_and_driver_are_never_cut_and_the_host_column_stays_when_scrolled() -> None:
    """At 80 columns the row does not fit: cc (sm_100 vs sm_103) and driver/CUDA keep their
    whole width, the rest is cut or scrolls, and scrolled right the host names stay."""
    app = create_app(replay_config(*FIVE))
    async with app.run_test(size=(80, 24)) as pilot:
        fleet, table = await open_fleet(app, pilot)
        keys = [c.key for c in COLUMNS]
        for key in ("cc", "driver"):
            i = keys.index(key)
            assert table.shown_widths[i] == table.column_widths[i]
        assert "580.159.04/13.0" in "\n".join(screen_lines(app)) or table.max_scroll_x > 0
        assert table.max_scroll_x > 0
        table.scroll_to(x=table.max_scroll_x, animate=False)
        await pilot.pause()
        lines = screen_lines(app)
        assert "580.159.04/13.0" in "\n".join(lines)  # scrolled into view, whole
        for i, name in enumerate(fleet.rows):
            assert lines[2 + i].startswith(f" {name} "), lines[2 + i]  # frozen host column


async def test_a_wide_terminal_shows_more_columns() -> None:
    app = create_app(replay_config(*FIVE))
    async with app.run_test(size=(220, 40)) as pilot:
        _, table = await open_fleet(app, pilot)
        header = screen_lines(app)[1]
        assert "GPU mem" in header and "kernel" in header and "RAM" in header
        assert table.virtual_size.width > 120
        assert "140 GiB" in "\n".join(screen_lines(app))  # an H200's memory
        await pilot.resize_terminal(100, 30)
        await until(pilot, lambda: "kernel" not in screen_lines(app)[1])


async def test_capital_o_and_a_second_header_click_reverse_the_sort() -> None:
    app = create_app(replay_config(*FIVE))
    async with app.run_test(size=SIZE) as pilot:
        fleet, _ = await open_fleet(app, pilot)
        await pilot.press("o")  # by host name
        assert fleet.rows == sorted(FIVE)
        await pilot.press("O")
        assert fleet.rows == sorted(FIVE, reverse=True)
        assert "sorted by host reversed" in screen_lines(app)[0]
        await pilot.press("O")
        assert fleet.rows == sorted(FIVE)
        await pilot.click(FleetTable, offset=(2, 0))  # the sorted column's header: reverse
        assert fleet.rows == sorted(FIVE, reverse=True)


async def test_scrolled_sideways_a_column_shows_whole_or_not_at_all() -> None:
    """Issue 33, item 7: a column whose start scrolled under the host column left its tail
    on screen (a stray "3" of "13.0"). At every offset, each header word is a whole label
    (but the last, where the right edge cuts it: the view goes on that way)."""
    app = create_app(replay_config(*FIVE))
    async with app.run_test(size=(80, 24)) as pilot:
        _fleet, table = await open_fleet(app, pilot)
        words = {w for c in COLUMNS for w in str(c.label).split()}
        assert table.max_scroll_x > 0
        for x in range(1, table.max_scroll_x + 1):
            table.scroll_to(x=x, animate=False)
            await pilot.pause()
            header = screen_lines(app)[1].rstrip("│")
            past_host = header.split()[1:]  # the frozen host column stays
            if not header.endswith(" "):
                past_host = past_host[:-1]  # cut by the right edge: there is more, scroll on
            assert set(past_host) <= words, (x, header, set(past_host) - words)
