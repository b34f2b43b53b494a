"""Run a Cortex-M bench image in qemu-system-arm with the instruction-counting plugin.

Counts (from nn2c_icount_plugin.c, summed over the W measurement windows = inferences):
- window k: instructions from the first instruction of bench_begin() to the first of bench_end(),
  and the loads and stores those instructions made (each element of an LDM/STM/LDRD/STRD/PUSH/POP
  counted: one per 32-bit access, as QEMU translates them; Helium accesses count per element);
- per function: sum of per-PC counts over the function's [address, address + size) from the ELF
  symbol table (objdump -t, FUNC symbols);
- per layer: the plugin charges every instruction executed from one instruction P of
  NAME_invoke up to the next instruction of NAME_invoke to P, so a call instruction's bucket is
  the whole call. P's source line (from NAME.o's line table, -g) lies under the generated comment
  `/* [k] OP: name */` of layer k, so layer k = the sum of the buckets of its lines; lines outside
  the layers (prologue, return) are invoke overhead. The buckets plus the two instructions before
  invoke starts (bench_begin's return, main's call) make up the window. Loads and stores are
  bucketed the same way (those two instructions access no memory).
Outputs come back as hex lines over semihosting: "O record output hex", "S record stack_bytes".
"""

from __future__ import annotations

import bisect
import re
import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from nn2c.codegen.render import RELOCATION_COMMENT
from nn2c.errors import BuildError
from nn2c.targets.cortexm_build import Image, arm_tool, check_target, plugin_path, require_tools

CODE_LO, CODE_HI = 0x0, 0x80000  # the linker script's code region
EXCEPTIONS = {2: "NMI", 3: "HardFault", 4: "MemManage", 5: "BusFault", 6: "UsageFault", 7: "SecureFault",
              11: "SVCall", 12: "DebugMonitor", 14: "PendSV", 15: "SysTick"}
EXIT_REASONS = {2: "the model's invoke returned an error", 3: "the baked-in input record has the wrong size"}


@dataclass(frozen=True)
class Symbol:
    name: str
    address: int
    size: int


@dataclass
class RunResult:
    outputs: dict[tuple[int, int], bytes]  # (record, output index) -> raw bytes
    stack_bytes: list[int]  # measured stack high-water mark below main, per record
    windows: list[int]  # instructions per inference
    pc_counts: dict[int, int]  # address -> executions, summed over windows
    site_counts: dict[int, int]  # address in NAME_invoke -> instructions charged, summed over windows
    outside: int = 0  # window instructions outside the code region (should be 0)
    loads: list[int] = field(default_factory=list)  # memory reads per inference (window)
    stores: list[int] = field(default_factory=list)  # memory writes per inference
    site_memory: dict[int, tuple[int, int]] = field(default_factory=dict)  # address -> (loads, stores) charged


@dataclass
class LayerCost:
    index: int
    op: str
    name: str
    instructions: float  # per inference
    calls: list[str] = field(default_factory=list)  # functions called from this layer's code
    loads: float = 0.0  # memory reads per inference
    stores: float = 0.0  # memory writes per inference


def functions(elf: Path) -> list[Symbol]:
    """FUNC symbols of the ELF (aliases collapse onto one address), sorted by address."""
    objdump = arm_tool("objdump")
    assert objdump is not None
    text = subprocess.run([objdump, "-t", str(elf)], capture_output=True, text=True, check=True).stdout
    found: dict[int, Symbol] = {}
    for line in text.splitlines():
        match = re.match(r"^([0-9a-f]{8})\s+(\S)\s+F\s+\S+\s+([0-9a-f]+)\s+(\S+)$", line.replace("\t", " "))
        if not match:
            continue
        address, size, name = int(match[1], 16) & ~1, int(match[3], 16), match[4]
        current = found.get(address)
        # prefer the real function over its aliases (nn2c_fault_handler over HardFault_Handler)
        if current is None or (name.startswith("nn2c_") and not current.name.startswith("nn2c_")):
            found[address] = Symbol(name, address, size)
    return sorted(found.values(), key=lambda s: s.address)


def symbol(symbols: list[Symbol], name: str) -> Symbol:
    for s in symbols:
        if s.name == name:
            return s
    raise BuildError(f"the bench image has no function {name!r}")


def run_image(image: Image, timeout: float = 600.0) -> RunResult:
    """Run the image once under QEMU with the plugin; raise BuildError on a fault or bad exit."""
    require_tools()
    symbols = functions(image.elf)
    begin, end = symbol(symbols, "bench_begin"), symbol(symbols, "bench_end")
    invoke = symbol(symbols, f"{image.name}_invoke")
    plugin = plugin_path()
    with tempfile.TemporaryDirectory(prefix="nn2c_qemu_") as tmp:
        counts_file = Path(tmp) / "counts.txt"
        plugin_args = {
            "begin": hex(begin.address), "end": hex(end.address), "site_lo": hex(invoke.address),
            "site_hi": hex(invoke.address + invoke.size), "code_lo": hex(CODE_LO), "code_hi": hex(CODE_HI),
            "out": str(counts_file).replace(",", ",,"),  # QemuOpts escapes a comma by doubling it
        }
        command = qemu_command(image, plugin, plugin_args)
        try:
            result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                    timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise BuildError(f"{image.name} on {image.target}: QEMU did not finish within {timeout:.0f} s "
                             "(a lockup after a fault, or an endless loop)") from exc
        _check_exit(image, result)
        if not counts_file.is_file():
            raise BuildError(f"the QEMU plugin wrote no counts: {result.stderr.strip()[:500]}")
        counts = counts_file.read_text()
    run = _parse_stdout(image, result.stdout)
    _parse_counts(counts, run)
    return run


def qemu_command(image: Image, plugin: Path, plugin_args: dict[str, str]) -> list[str]:
    """qemu-system-arm on the target's board (from the target table), counting with the plugin."""
    return [
        "qemu-system-arm", "-M", str(check_target(image.target).qemu_board), "-nographic", "-monitor", "none",
        "-serial", "none", "-icount", "shift=0,align=off,sleep=off", "-chardev", "stdio,id=sh",
        "-semihosting-config", "enable=on,target=native,chardev=sh",
        "-plugin", ",".join([str(plugin).replace(",", ",,")] + [f"{k}={v}" for k, v in plugin_args.items()]),
        "-kernel", str(image.elf),
    ]


def _check_exit(image: Image, result: subprocess.CompletedProcess) -> None:
    if result.returncode == 0 and "NN2C-BENCH-DONE" in result.stdout:
        return
    where = f"{image.name} on {image.target} (QEMU {check_target(image.target).qemu_board})"
    status = result.returncode
    if status >= 64 and status < 255:
        name = EXCEPTIONS.get(status - 64, f"exception {status - 64}")
        raise BuildError(f"{where}: the image stopped on a {name} fault (exit status {status})")
    if status in EXIT_REASONS:
        raise BuildError(f"{where}: {EXIT_REASONS[status]} (exit status {status})")
    detail = (result.stderr.strip() or result.stdout.strip())[-500:]
    raise BuildError(f"{where}: QEMU exited with status {status} before the bench finished: {detail}")


def _parse_stdout(image: Image, text: str) -> RunResult:
    hex_parts: dict[tuple[int, int], list[str]] = defaultdict(list)
    stack: dict[int, int] = {}
    for line in text.splitlines():
        fields = line.split()
        if fields[:1] == ["O"] and len(fields) in (3, 4):
            hex_parts[(int(fields[1]), int(fields[2]))].append(fields[3] if len(fields) == 4 else "")
        elif fields[:1] == ["S"] and len(fields) == 3:
            stack[int(fields[1])] = int(fields[2])
    outputs = {key: bytes.fromhex("".join(parts)) for key, parts in hex_parts.items()}
    return RunResult(outputs, [stack[k] for k in sorted(stack)], [], {}, {})


def _parse_counts(text: str, run: RunResult) -> None:
    lines = text.splitlines()
    if not lines or lines[0] != "nn2c-icount 2":
        raise BuildError("the QEMU plugin's counts file is not in the expected format")
    for line in lines[1:]:
        fields = line.split()
        if fields[0] == "w":
            run.windows.append(int(fields[1]))
            run.loads.append(int(fields[2]))
            run.stores.append(int(fields[3]))
        elif fields[0] == "pc":
            run.pc_counts[int(fields[1], 16)] = int(fields[2])
        elif fields[0] == "site":
            run.site_counts[int(fields[1], 16)] = int(fields[2])
            run.site_memory[int(fields[1], 16)] = (int(fields[3]), int(fields[4]))
        elif fields[0] == "outside":
            run.outside = int(fields[1])
        elif fields[0] == "dropped" and int(fields[1]):
            raise BuildError("more measurement windows than the QEMU plugin records; run fewer inputs")
        elif fields[0] == "open" and int(fields[1]):
            raise BuildError("a measurement window was still open at exit (bench_end never ran)")


def function_counts(run: RunResult, symbols: list[Symbol]) -> dict[str, int]:
    """Instructions executed inside each function, summed over windows."""
    starts = [s.address for s in symbols]
    totals: dict[str, int] = defaultdict(int)
    for pc, count in run.pc_counts.items():
        i = bisect.bisect_right(starts, pc) - 1
        if i >= 0 and pc < symbols[i].address + max(symbols[i].size, 2):
            totals[symbols[i].name] += count
        else:
            totals["(unknown)"] += count
    return dict(totals)


def call_targets(image: Image, invoke: Symbol) -> dict[int, str]:
    """Address of each call (or tail branch) out of NAME_invoke -> the called function."""
    objdump = arm_tool("objdump")
    assert objdump is not None
    text = subprocess.run(
        [objdump, "-d", "--no-show-raw-insn", f"--start-address={invoke.address:#x}",
         f"--stop-address={invoke.address + invoke.size:#x}", str(image.elf)],
        capture_output=True, text=True, check=True).stdout
    calls = {}
    for line in text.splitlines():
        match = re.match(r"^\s*([0-9a-f]+):\s+(b\S*)\s+[0-9a-f]+ <([^>+]+)>", line)
        if match and match[3] != invoke.name:
            calls[int(match[1], 16)] = match[3]
    return calls


def source_lines(image: Image, function: Symbol, addresses: list[int]) -> dict[int, tuple[str, int]]:
    """address in `function` -> (source file name, line) of the function's own source: for code inlined
    into it (an NN2C_INLINE helper such as a row group's nn2c_move), the line of the outermost call,
    so that the code counts where the function calls it.

    Read from NAME.o (offsets into .text.FUNCTION), not from the linked ELF: there, the line
    entries of functions that --gc-sections dropped are relocated to address 0 and shadow the
    real code at low addresses."""
    if not addresses:
        return {}
    addr2line = arm_tool("addr2line")
    assert addr2line is not None
    obj = image.build_dir / "obj" / f"{image.name}.o"
    text = subprocess.run(
        [addr2line, "-e", str(obj), "-j", f".text.{function.name}", "-a", "-i",
         *[hex(a - function.address) for a in addresses]],
        capture_output=True, text=True, check=True).stdout.splitlines()
    found = {}
    address = None
    for entry in text:  # "0x..." then its locations, innermost first: the last one is the outermost
        if entry.startswith("0x"):
            address = int(entry, 16) + function.address
            continue
        if address is None:
            continue
        location = entry.split(" (discriminator")[0]
        file, _, line = location.rpartition(":")
        found[address] = (Path(file).name, int(line) if line.isdigit() else 0)
    return found


def layer_profile(image: Image, model_dir: Path, run: RunResult) -> tuple[list[LayerCost], float]:
    """Per-layer instructions, loads and stores per inference, and the invoke overhead (instructions)
    outside any layer (its loads and stores: the window's minus the layers')."""
    symbols = functions(image.elf)
    invoke = symbol(symbols, f"{image.name}_invoke")
    layers, first_line, return_line, relocations = _layer_comments(model_dir / f"{image.name}.c", image.name)
    starts = sorted(layers)
    calls = call_targets(image, invoke)
    lines = source_lines(image, invoke, sorted(set(run.site_counts) | set(calls)))
    windows = max(len(run.windows), 1)
    costs = {line: LayerCost(index, op, name, 0.0) for line, (index, op, name) in layers.items()}
    overhead = 0.0

    def owner(address: int) -> LayerCost | None:
        file, line = lines.get(address, ("", 0))
        if file != f"{image.name}.c" or not first_line <= line < return_line or line in relocations:
            return None  # outside the layers, or a relocation between them (nn2c.profile models those apart)
        i = bisect.bisect_right(starts, line) - 1
        return costs[starts[i]] if i >= 0 else None

    for address, count in run.site_counts.items():
        cost = owner(address)
        if cost is None:
            overhead += count / windows
        else:
            cost.instructions += count / windows
            loads, stores = run.site_memory.get(address, (0, 0))
            cost.loads += loads / windows
            cost.stores += stores / windows
    for address, callee in sorted(calls.items()):
        cost = owner(address)
        if cost is not None and callee not in cost.calls:
            cost.calls.append(callee)
    return [costs[line] for line in starts], overhead


def _layer_comments(source: Path, name: str) -> tuple[dict[int, tuple[int, str, str]], int, int, set[int]]:
    """Line of each `/* [k] OP: name */` in NAME_invoke -> (k, OP, name); first layer line; return line;
    the lines of the relocations (codegen/render.py: `nn2c_move(...); /* relocated: ... */`)."""
    text = source.read_text().splitlines()
    start = next((i for i, t in enumerate(text) if t.startswith(f"int {name}_invoke(void)")), None)
    if start is None:
        raise BuildError(f"{source.name}: no {name}_invoke function")
    layers: dict[int, tuple[int, str, str]] = {}
    end = next((i for i in range(start + 1, len(text)) if text[i].startswith("}")), len(text))
    for i in range(start + 1, end):
        match = re.match(r"^\s*/\* \[(\d+)\] ([A-Z0-9_]+)(?:: (.*?))? \*/\s*$", text[i])
        if match:
            layers[i + 1] = (int(match[1]), match[2], match[3] or "")
    # the final `return NAME_OK;` (1-based line numbers) ends the last layer
    return_line = next((i + 1 for i in range(end - 1, start, -1) if text[i].strip().startswith("return ")),
                       end + 1)
    first_line = min(layers) if layers else return_line
    relocations = {i + 1 for i in range(start + 1, end) if RELOCATION_COMMENT in text[i]}
    return layers, first_line, return_line, relocations
