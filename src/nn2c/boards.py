"""The boards `--board NAME` knows, in one table: the core (which --target), the clock, and the RAM
and flash a model may use.

A board sets the target core and the budgets of a compile (--ram-budget = the board's SRAM for
data, --flash-budget = its flash; a smaller budget given by the user wins), and turns predicted
instructions into an *estimated* latency: ms = instructions x cycles-per-instruction / clock. The
cycles-per-instruction factors below are assumptions about the cores, not measurements (QEMU
counts instructions, not cycles; it models no pipeline, wait states or caches).

Figures are the vendors' datasheet figures. Where a part's RAM is split into banks, `ram_bytes`
is the RAM a model's static data (one arena + state) can use, and `ram_note` says which banks.
A bottom-floor module like nn2c.target: it imports nothing of nn2c but nn2c.errors and nn2c.target.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from nn2c.errors import BudgetExceededError, UsageError
from nn2c.target import get_target

T = TypeVar("T")
KB = 1024
MB = 1024 * 1024

# Assumed cycles per instruction of nn2c's int8 kernels (an estimate, not measured on hardware):
# Cortex-M4: single issue, a load costs 2 cycles (1 when pipelined after another), zero-wait-state
# flash through the ART / cache; about a third of the kernels' instructions are loads -> ~1.3.
# Cortex-M7: dual issue with caches; the kernels' SMLAD chains limit pairing -> ~1.0.
# Cortex-M55: single-issue scalar pipeline, Helium beats overlap (2 beats per tick) -> ~1.1.
# Cortex-M0+: no cost model (nn2c has no M0+ target); the factor is given for completeness only.
CPI = {"cortex-m4": 1.3, "cortex-m7": 1.0, "cortex-m55": 1.1, "cortex-m0plus": 1.2}


@dataclass(frozen=True)
class Board:
    name: str  # the --board value
    part: str  # what it is
    core: str  # the Arm core (cortex-m4, cortex-m7, cortex-m55, cortex-m0plus)
    target: str  # the nn2c --target whose kernels it runs
    clock_mhz: float
    ram_bytes: int  # RAM for the model's arena + state (see ram_note)
    flash_bytes: int  # flash for code + weights
    ram_note: str = ""
    note: str = ""

    @property
    def cpi(self) -> float:
        """Assumed cycles per instruction (an estimate, see CPI)."""
        return CPI[self.core]

    def latency_ms(self, instructions: float) -> float:
        """Estimated latency in milliseconds: instructions x CPI / clock."""
        return instructions * self.cpi / (self.clock_mhz * 1e3)

    @property
    def bench_target(self) -> str | None:
        """The `nn2c bench` target of this board's core (None: QEMU has no bench image for it)."""
        spec = get_target(self.target)
        return self.target if spec.qemu_board is not None else None

    def as_dict(self) -> dict:
        return {"name": self.name, "part": self.part, "core": self.core, "target": self.target,
                "clock_mhz": self.clock_mhz, "ram_bytes": self.ram_bytes, "flash_bytes": self.flash_bytes,
                "cpi_assumed": self.cpi, "ram_note": self.ram_note, "note": self.note}


BOARDS: dict[str, Board] = {b.name: b for b in (
    Board("stm32f746", "STM32F746 (Cortex-M7)", "cortex-m7", "cortex-m7", 216, 320 * KB, 1 * MB,
          ram_note="320 KB: 64 KB DTCM + 240 KB SRAM1 + 16 KB SRAM2 (contiguous from 0x20000000)"),
    Board("stm32h743", "STM32H743 (Cortex-M7)", "cortex-m7", "cortex-m7", 480, 512 * KB, 2 * MB,
          ram_note="512 KB AXI SRAM, the largest contiguous bank (the part has 1 MB of RAM in all: "
                   "128 KB DTCM, 64 KB ITCM, 512 KB AXI SRAM, 288 KB SRAM1-3, 64 KB SRAM4); one arena "
                   "must be contiguous"),
    Board("stm32l4r5", "STM32L4R5 (Cortex-M4F, MLPerf Tiny's reference board)", "cortex-m4", "cortex-m4",
          120, 640 * KB, 2 * MB, ram_note="640 KB: SRAM1 192 KB + SRAM2 64 KB + SRAM3 384 KB"),
    Board("stm32f412", "STM32F412 (Cortex-M4F)", "cortex-m4", "cortex-m4", 100, 256 * KB, 1 * MB),
    Board("nrf52840", "Nordic nRF52840 (Cortex-M4F)", "cortex-m4", "cortex-m4", 64, 256 * KB, 1 * MB,
          note="a BLE stack (SoftDevice) takes part of the RAM and flash; pass a smaller --ram-budget"),
    Board("alif-e3-hp", "Alif Ensemble E3 high-performance core (Cortex-M55 + Helium, Corstone-300 class)",
          "cortex-m55", "cortex-m55", 400, 1 * MB, 5632 * KB,
          ram_note="1 MB: SRAM3, the DTCM of the high-performance M55 at 400 MHz (Alif's 'RAM regions' "
                   "white paper; the maximum, the part number decides; the 4 MB + 2.5 MB bulk SRAM0/1 is "
                   "further from the core); flash: 5.5 MB MRAM. Chosen as a shipping Corstone-300-class part "
                   "with an M55 at a realistic clock (the Corstone-300 FPGA image runs at 32 MHz)"),
    Board("rp2040", "Raspberry Pi RP2040 (dual Cortex-M0+)", "cortex-m0plus", "host", 133, 264 * KB, 2 * MB,
          ram_note="264 KB SRAM (6 banks); flash: the 2 MB QSPI chip of the Pico board",
          note="nn2c has no Cortex-M0+ target: the portable C kernels (--target host) are compiled; no "
               "instruction prediction and no QEMU bench"),
)}


def get_board(name: str | Board) -> Board:
    """The table entry of a --board name (case-insensitive); UsageError listing the boards."""
    if isinstance(name, Board):
        return name
    board = BOARDS.get(str(name).lower())
    if board is None:
        raise UsageError(f"unknown board {name!r}; choose one of {', '.join(BOARDS)}")
    return board


def board_target(board: Board, target: str | None) -> str:
    """The --target of a compile on `board`; an explicit, different --target is a usage error."""
    if target is not None and target != board.target:
        raise UsageError(f"--board {board.name} runs --target {board.target} ({board.core}), "
                         f"not --target {target}; drop one of the two")
    return board.target


def board_budget(board: Board, ram_budget: int | None, flash_budget: int | None) -> tuple[int, int]:
    """The RAM and flash budgets of a compile on `board`: the user's, where smaller than the board's."""
    ram = board.ram_bytes if ram_budget is None else min(ram_budget, board.ram_bytes)
    flash = board.flash_bytes if flash_budget is None else min(flash_budget, board.flash_bytes)
    return ram, flash


def board_options(options: Any, board: str | Board, target_given: bool) -> Any:
    """CompileOptions for `board`: its target (an explicit, different --target is an error) and its
    budgets (the user's where smaller)."""
    spec = get_board(board)
    target = board_target(spec, options.target if target_given else None)
    ram, flash = board_budget(spec, options.ram_budget, options.flash_budget)
    return replace(options, target=target, ram_budget=ram, flash_budget=flash)


def on_board(board: str | Board | None, run: Callable[[], T], user_budgets: bool = False) -> T:
    """run(); a budget error says which board the model does not fit, with its figures (exit 4).
    user_budgets: the user gave --ram-budget / --flash-budget too (then the smaller one was checked)."""
    if board is None:
        return run()
    spec = get_board(board)
    try:
        return run()
    except BudgetExceededError as exc:
        also = " or your smaller budget" if user_budgets else ""
        raise BudgetExceededError(f"does not fit board {spec.name} ({spec.ram_bytes:,} B RAM, "
                                  f"{spec.flash_bytes:,} B flash){also}: {exc}") from None
