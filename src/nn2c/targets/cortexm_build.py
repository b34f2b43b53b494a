"""Cross-build an nn2c output folder into a bare-metal Cortex-M bench image, and the QEMU plugin.

Image = the model's C files (main.c, the host runner, excluded) + nn2c_startup.c +
nn2c_bench_main.c + a generated nn2c_bench_config.h (the model's API under fixed names) and
nn2c_bench_inputs.c (the input records, concatenated raw tensors in model order, in flash).
Each .c is compiled to its own object (so the link map attributes every section to one file),
with arm-none-eabi-gcc -O2 and the core's flags, then linked with newlib-nano against
nn2c_cortexm.ld with --gc-sections and a map file.

The instruction-counting plugin is host C, built once per source/compiler into a cache folder.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from nn2c.errors import BuildError
from nn2c.target import TARGETS, Target, bench_targets
from nn2c.targets import cortexm

COMPILE_FLAGS = ["-O2", "-g", "-std=c11", "-Wall", "-Wextra", "-ffunction-sections", "-fdata-sections",
                 "-fstack-usage"]
LINK_FLAGS = ["-nostartfiles", "--specs=nano.specs", "--specs=nosys.specs", "-Wl,--gc-sections"]
ARM_TOOLS = ("gcc", "objdump", "addr2line")
CONFIG_HEADER = "nn2c_bench_config.h"
INPUTS_SOURCE = "nn2c_bench_inputs.c"


@dataclass
class Image:
    """A linked bench image and what was built alongside it."""

    target: str
    name: str  # the model's C prefix
    elf: Path
    map_file: Path
    build_dir: Path
    model_objects: list[str]  # object file names of the model (NAME.o, NAME_weights.o, kernels)
    warnings: list[str] = field(default_factory=list)


def arm_tool(tool: str) -> str | None:
    return shutil.which(f"arm-none-eabi-{tool}")


def missing_tools(need_qemu: bool = True) -> list[str]:
    """Names of the missing programs the Cortex-M bench needs (empty when all are installed)."""
    missing = [f"arm-none-eabi-{t}" for t in ARM_TOOLS if not arm_tool(t)]
    if need_qemu and not shutil.which("qemu-system-arm"):
        missing.append("qemu-system-arm")
    return missing


def require_tools(need_qemu: bool = True) -> None:
    missing = missing_tools(need_qemu)
    if missing:
        raise BuildError(
            f"the Cortex-M bench needs {', '.join(missing)}: install the Debian packages gcc-arm-none-eabi "
            "binutils-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm"
        )


def check_target(target: str) -> Target:
    """The table entry of a target the bench can build and run (one with a QEMU board)."""
    spec = TARGETS.get(target)
    if spec is None or spec.qemu_board is None:
        raise BuildError(f"unknown Cortex-M target {target!r}; choose one of {', '.join(bench_targets())}")
    return spec


def config_header(name: str, records: int, record_bytes: int) -> str:
    up = name.upper()
    return "\n".join([
        "/* nn2c_bench_config.h: the model's API under the names nn2c_bench_main.c uses. Generated. */",
        "#ifndef NN2C_BENCH_CONFIG_H",
        "#define NN2C_BENCH_CONFIG_H",
        f'#include "{name}.h"',
        f"#define NN2C_BENCH_RECORDS {records}",
        f"#define NN2C_BENCH_RECORD_BYTES {record_bytes}",
        f"#define NN2C_BENCH_RECORD_STRIDE {max(record_bytes, 1)}",
        f"#define NN2C_BENCH_NUM_INPUTS {up}_NUM_INPUTS",
        f"#define NN2C_BENCH_NUM_OUTPUTS {up}_NUM_OUTPUTS",
        f"#define NN2C_BENCH_OK {up}_OK",
        f"#define NN2C_BENCH_INPUT(i) {name}_input(i)",
        f"#define NN2C_BENCH_INPUT_BYTES(i) {name}_input_bytes(i)",
        f"#define NN2C_BENCH_OUTPUT(i) {name}_output(i)",
        f"#define NN2C_BENCH_OUTPUT_BYTES(i) {name}_output_bytes(i)",
        f"#define NN2C_BENCH_INVOKE {name}_invoke",
        "#endif",
        "",
    ])


def inputs_source(records: list[bytes], alignment: int = 16) -> str:
    """The records as one const (flash) array, [records][stride] bytes, aligned as the target's arrays."""
    stride = max(max((len(r) for r in records), default=0), 1)
    lines = [
        "/* nn2c_bench_inputs.c: input records of the bench (raw tensors in model order). Generated. */",
        "#include <stdint.h>",
        f'#include "{CONFIG_HEADER}"',
        "const uint8_t nn2c_bench_inputs[NN2C_BENCH_RECORDS][NN2C_BENCH_RECORD_STRIDE] "
        f"__attribute__((aligned({alignment}))) = {{",
    ]
    for record in records:
        padded = record + bytes(stride - len(record))
        lines.append("    {")
        for start in range(0, len(padded), 24):
            lines.append("        " + ", ".join(str(b) for b in padded[start:start + 24]) + ",")
        lines.append("    },")
    lines.append("};")
    return "\n".join(lines) + "\n"


def large_memory_script(script: str, target: str) -> str:
    """The bench linker script with room for big models (`nn2c bench --board`, bench/cortexm.py):
    Cortex-M4/M7 (mps2-an386/an500) get the board's 4 MiB of code memory and 4 MiB of RAM;
    Cortex-M55 (mps3-an547, 512 KiB ITCM / DTCM) keeps its code in ITCM, the read-only data of the
    weights and of the bench inputs go to DDR at 0x60000000 and its RAM to the 4 MiB SRAM at
    0x21000000. Instruction counts do not depend on where the data sit."""
    if TARGETS[target].qemu_board != "mps3-an547":
        return (script.replace("ORIGIN = 0x00000000, LENGTH = 512K", "ORIGIN = 0x00000000, LENGTH = 4096K")
                .replace("ORIGIN = 0x20000000, LENGTH = 512K", "ORIGIN = 0x20000000, LENGTH = 4096K"))
    script = script.replace("FLASH (rx)  : ORIGIN = 0x00000000, LENGTH = 512K",
                            "FLASH (rx)  : ORIGIN = 0x00000000, LENGTH = 512K\n"
                            "    DDR (rx)    : ORIGIN = 0x60000000, LENGTH = 16384K")
    script = script.replace("ORIGIN = 0x20000000, LENGTH = 512K", "ORIGIN = 0x21000000, LENGTH = 4096K")
    weights = "*_weights.o(.rodata .rodata.*) *nn2c_bench_inputs.o(.rodata .rodata.*)"
    return script.replace("    .text :\n", f"    .weights : {{ {weights} }} > DDR\n\n    .text :\n")


def build_image(model_dir: Path, name: str, records: list[bytes], target: str, build_dir: Path,
                stack_reserve: int = 0x2000, large_memory: bool = False) -> Image:
    """Compile and link model_dir (an nn2c output folder) with the bench runtime for target (its core
    flags from the target table, for every object and the link); large_memory: the memory map of
    large_memory_script (4 MiB code and 4 MiB RAM)."""
    spec = check_target(target)
    require_tools(need_qemu=False)
    if not records or len({len(r) for r in records}) != 1:
        raise BuildError("the bench needs at least one input record, all of the same size")
    build_dir.mkdir(parents=True, exist_ok=True)
    runtime = build_dir / "runtime"
    runtime.mkdir(exist_ok=True)
    for file in (*cortexm.RUNTIME_SOURCES, *cortexm.RUNTIME_HEADERS, cortexm.LINKER_SCRIPT):
        text = cortexm.data_text(file)
        if large_memory and file == cortexm.LINKER_SCRIPT:
            text = large_memory_script(text, target)
        (runtime / file).write_text(text)
    (runtime / CONFIG_HEADER).write_text(config_header(name, len(records), len(records[0])))
    (runtime / INPUTS_SOURCE).write_text(inputs_source(records, spec.alignment))

    model_sources = [p for p in sorted(model_dir.rglob("*.c")) if p.relative_to(model_dir) != Path("main.c")]
    runtime_sources = [runtime / f for f in (*cortexm.RUNTIME_SOURCES, INPUTS_SOURCE)]
    stems = [p.stem for p in model_sources + runtime_sources]
    if len(set(stems)) != len(stems):
        raise BuildError(f"two C files of {model_dir} share a file name; cannot build one object per file")

    gcc = arm_tool("gcc")
    assert gcc is not None
    flags = [*spec.cflags, *COMPILE_FLAGS]
    includes = ["-I", str(model_dir), "-I", str(runtime)]
    includes += [arg for d in sorted({p.parent for p in model_sources} - {model_dir}) for arg in ("-I", str(d))]
    objects_dir = build_dir / "obj"
    objects_dir.mkdir(exist_ok=True)
    warnings: list[str] = []
    objects = []
    from nn2c.verify.build import SIDE_FILES, cached_object, default_object_cache

    cache = default_object_cache()
    for source in model_sources + runtime_sources:
        obj = objects_dir / f"{source.stem}.o"
        if cache and source.parent.name == "nn2c_kernels":  # (kernels include only their own folder's files)
            cached, messages = cached_object(gcc, flags, source, cache)
            if cached is not None:  # under its own name: the map file's objects name the layers' code
                for suffix in (".o", *SIDE_FILES):  # (-fstack-usage's .su: tests/test_cortexm.py reads them)
                    if cached.with_suffix(suffix).exists():
                        shutil.copyfile(cached.with_suffix(suffix), obj.with_suffix(suffix))
            returncode = int(cached is None)
        else:
            result = _run([gcc, *flags, *includes, "-c", str(source), "-o", str(obj)], cwd=objects_dir)
            returncode, messages = result.returncode, result.stderr
        if returncode:
            raise BuildError(f"arm-none-eabi-gcc failed on {source.name} ({target}): "
                             + "\n".join(messages.strip().splitlines()[:20]))
        warnings += [line for line in messages.splitlines() if "warning:" in line]
        objects.append(obj)

    elf, map_file = build_dir / f"{name}_{target}.elf", build_dir / f"{name}_{target}.map"
    link = [gcc, *spec.cflags, *LINK_FLAGS, "-T", str(runtime / cortexm.LINKER_SCRIPT),
            f"-Wl,--defsym=__stack_size={stack_reserve}", f"-Wl,-Map={map_file}",
            *map(str, objects), "-lm", "-o", str(elf)]
    result = _run(link, cwd=build_dir)
    if result.returncode:
        message = result.stderr.strip()
        overflows = re.findall(r"region [`'](\w+)' overflowed by (\d+) bytes", message)
        if overflows or "will not fit in region" in message:
            detail = ", ".join(f"{region} by {int(n):,} B" for region, n in overflows) or _first_lines(message, 2)
            size = "4 MiB code, 4 MiB RAM" if large_memory else "512 KiB flash, 512 KiB RAM"
            raise BuildError(f"{name} does not fit the {target} bench image ({size} including "
                             f"{stack_reserve:,} B of stack): overflows {detail}"
                             + ("" if large_memory else "; --board NAME benches it in a larger memory map"))
        raise BuildError(f"linking the {target} image of {name} failed: " + _first_lines(message, 20))
    model_objects = [f"{p.stem}.o" for p in model_sources]
    return Image(target, name, elf, map_file, build_dir, model_objects, warnings)


def _first_lines(text: str, n: int) -> str:
    return "\n".join(text.splitlines()[:n])


def _run(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd)


# --- the QEMU plugin ------------------------------------------------------------------------


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nn2c"


def plugin_path() -> Path:
    """The instruction-counting plugin, built with the host compiler on first use and cached."""
    from nn2c.verify.build import c_compiler

    source = cortexm.data_text(cortexm.PLUGIN_SOURCE)
    compiler = c_compiler()
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256((source + "\0" + version).encode()).hexdigest()[:16]
    for folder in (cache_dir(), Path(tempfile.gettempdir()) / f"nn2c-{os.getuid()}"):
        target = folder / f"nn2c_icount_plugin-{key}.so"
        if target.is_file():
            return target
        try:
            folder.mkdir(parents=True, exist_ok=True)
            return _build_plugin(compiler, source, target)
        except OSError:
            continue  # cache not writable: fall back to the temporary folder
    raise BuildError("cannot write the QEMU plugin into ~/.cache/nn2c or the temporary folder")


def _build_plugin(compiler: str, source: str, target: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix="nn2c_plugin_", dir=target.parent) as tmp:
        src = Path(tmp) / cortexm.PLUGIN_SOURCE
        src.write_text(source)
        out = Path(tmp) / target.name
        result = _run([compiler, "-shared", "-fPIC", "-O2", "-std=c11", "-Wall", "-Wextra", "-o", str(out), str(src)])
        if result.returncode:
            raise BuildError("building the QEMU plugin failed: " + _first_lines(result.stderr, 20))
        os.replace(out, target)  # atomic: concurrent builders leave one complete file
    return target
