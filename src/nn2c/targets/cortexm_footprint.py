"""Flash and RAM of a linked Cortex-M bench image, split by owner, from the GNU ld map file.

Every input section kept after --gc-sections is listed in the map under its output section with
its size and object file. Flash = .text (code, read-only data, vectors) + .ARM.ex* + the load
image of .data; RAM = .data + .bss (the stack reservation is not counted: the measured stack
high-water mark is reported instead). Owners:
- weights: NAME_weights.o (the model's constant tensors);
- model code: NAME.o and the kernel objects (code, params structs, arena and state in RAM); of it, NAME.o's
  read-only data are the layers' descriptions (flash_layers);
- libraries: members of .a archives (newlib-nano memcpy/memset, libm, libgcc helpers), shared
  by the model and the bench harness;
- harness: the bench's startup, main and baked-in inputs. Alignment fill is charged to the
  section it aligns (the next one); fill at the end of an output section is padding.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

# (.weights: the Cortex-M55 large memory map's read-only data in DDR, cortexm_build.large_memory_script: the
# weights and the bench inputs, read-only memory as flash is; without it such an image showed 0 B of weights)
FLASH_SECTIONS = {".text", ".ARM.extab", ".ARM.exidx", ".data", ".weights"}
RAM_SECTIONS = {".data", ".bss"}
HARNESS_OBJECTS = {"nn2c_startup.o", "nn2c_bench_main.o", "nn2c_bench_inputs.o"}

_OUTPUT = re.compile(r"^(\.[^\s]+)(?:\s+0x([0-9a-f]+)\s+0x([0-9a-f]+))?")
_INPUT = re.compile(r"^ (\*fill\*|COMMON|\.[^\s]+|[^\s*]+)(?:\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)(?:\s+(.*))?)?$")
_CONTINUATION = re.compile(r"^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)(?:\s+(.*))?$")


@dataclass(frozen=True)
class ImageFootprint:
    flash_code: int  # model code + its read-only data (params structs, tables), without weights
    # of flash_code, the model object's read-only data: its layers' descriptions (parameter structs, loop and band
    # tables), what TFLM reads from the flatbuffer and computes into its arena; the rest of flash_code is the
    # instructions and the kernels' own constant tables, the part comparable with TFLM's runtime code
    flash_layers: int
    flash_weights: int  # NAME_weights.o
    flash_libraries: int  # libc/libm/libgcc members pulled in (shared with the harness)
    flash_harness: int  # startup, bench main, baked-in input records
    flash_padding: int
    flash_total: int
    ram_arena: int  # NAME_arena (the planned tensor arena)
    ram_model: int  # .data + .bss of the model's objects: arena + state + other static data
    ram_other: int  # .data + .bss of the harness and libraries
    ram_total: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Piece:
    output: str  # output section
    name: str  # input section
    size: int
    owner: str  # object file name or archive member, "" for fill


def map_pieces(map_file: Path) -> list[Piece]:
    """Input sections of the memory map part of a GNU ld map file."""
    text = map_file.read_text(errors="replace")
    if "Linker script and memory map" in text:
        text = text.split("Linker script and memory map", 1)[1]
    pieces = []
    output = ""
    pending: str | None = None
    for line in text.splitlines():
        if pending is not None:
            match = _CONTINUATION.match(line)
            if match:
                pieces.append(Piece(output, pending, int(match[2], 16), _owner(match[3] or "")))
            pending = None
            continue
        if line.startswith("."):
            match = _OUTPUT.match(line)
            output = match[1] if match else ""
            continue
        match = _INPUT.match(line)
        if not match or not output:
            continue
        if match[2] is None:
            pending = match[1]  # long section name: address, size and file on the next line
        else:
            pieces.append(Piece(output, match[1], int(match[3], 16), _owner(match[4] or "")))
    return pieces


def _owner(file: str) -> str:
    file = file.strip()
    if not file or file == "linker stubs":
        return ""
    archive = re.match(r"^(.*\.a)\((.*)\)$", file)
    if archive:
        return f"{Path(archive[1]).name}({archive[2]})"
    return Path(file).name


def image_footprint(map_file: Path, name: str, model_objects: list[str]) -> ImageFootprint:
    weights_object = f"{name}_weights.o"
    model = set(model_objects) - {weights_object}
    flash = dict.fromkeys(("code", "weights", "libraries", "harness", "padding", "other"), 0)
    ram = dict.fromkeys(("model", "other"), 0)
    arena = 0
    pieces = _charge_fill(map_pieces(map_file))
    layers = 0
    for piece in pieces:
        if piece.output in FLASH_SECTIONS:
            flash[_flash_owner(piece, weights_object, model)] += piece.size
            if piece.owner == f"{name}.o" and piece.name.startswith((".rodata", ".data")):
                layers += piece.size
        if piece.output in RAM_SECTIONS:
            ram["model" if piece.owner in model | {weights_object} else "other"] += piece.size
            if piece.name in (f".bss.{name}_arena", f".data.{name}_arena"):
                arena = piece.size
    return ImageFootprint(
        flash_code=flash["code"], flash_layers=layers, flash_weights=flash["weights"], flash_libraries=flash["libraries"],
        flash_harness=flash["harness"], flash_padding=flash["padding"] + flash["other"],
        flash_total=sum(flash.values()), ram_arena=arena, ram_model=ram["model"], ram_other=ram["other"],
        ram_total=sum(ram.values()),
    )


def _charge_fill(pieces: list[Piece]) -> list[Piece]:
    """Alignment fill belongs to the next section of the same output section (it aligns that one)."""
    charged = list(pieces)
    for i in range(len(charged) - 2, -1, -1):
        piece, following = charged[i], charged[i + 1]
        if piece.name == "*fill*" and following.output == piece.output and following.owner:
            charged[i] = Piece(piece.output, piece.name, piece.size, following.owner)
    return charged


def _flash_owner(piece: Piece, weights_object: str, model: set[str]) -> str:
    if not piece.owner:
        return "padding"
    if piece.owner == weights_object:
        return "weights"
    if piece.owner in model:
        return "code"
    if piece.owner in HARNESS_OBJECTS:
        return "harness"
    if ".a(" in piece.owner:
        return "libraries"
    return "other"
