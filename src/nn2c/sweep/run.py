"""Run a sweep: every candidate of a search space profiled (nn2c.profile on an in-memory graph) on
Ray workers, one CSV row per candidate appended the moment it finishes.

Fault tolerance and resuming come from two facts:
- a finished row is on disk (flushed and fsynced) before the next result is awaited, so an
  interrupted driver loses nothing finished, and a re-run reads results.csv and skips every
  candidate id it holds (ok or failed: a failure is deterministic, a re-run would fail again);
- a Ray task whose worker process or node dies is re-run by Ray elsewhere (max_retries), so a
  crashed worker costs only the time of its task. A candidate nn2c cannot compile is a row with
  status "failed" and the error's first line; the sweep goes on.
The serial path (use_ray=False) runs the same evaluation in this process, for comparison
(bench/sweep.py) and where Ray is not installed.
"""

from __future__ import annotations

import csv
import os
import socket
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nn2c.boards import get_board
from nn2c.errors import UsageError
from nn2c.sweep.space import Candidate, SearchSpace, build_candidate, candidates, load_space

RESULTS = "results.csv"
COLUMNS = ("id", "index", "source", "resolution", "width", "depths", "kernel_sizes", "expand_ratios",
           "weight_seed", "board", "target", "ram_bytes", "arena_bytes", "state_bytes", "weight_bytes",
           "flash_bytes_estimate", "macs", "predicted_instructions", "latency_ms_estimate", "fits_ram",
           "fits_flash", "fits", "status", "error", "profile_seconds")
TASK_RETRIES = 3  # Ray re-runs a task this many times when its worker or node dies


def evaluate(candidate: Candidate, board: str | None, target: str | None, schedule: str) -> dict[str, Any]:
    """One CSV row: the candidate's parameters and its profile, or status "failed" with the error's
    first line (any exception: one bad candidate must not stop a sweep)."""
    from nn2c.frontends.tflite_frontend import load_tflite
    from nn2c.options import CompileOptions
    from nn2c.profiler import profile

    row: dict[str, Any] = {"id": candidate.id, "index": candidate.index, **candidate.row_params(),
                           "board": board or "", "status": "ok", "error": ""}
    started = time.perf_counter()
    try:
        if "path" in candidate.params:
            model: Any = candidate.params["path"]
        else:
            model = load_tflite(f"candidate_{candidate.id}", build_candidate(candidate.params))
        result = profile(model, target=target, board=board, options=CompileOptions(schedule=schedule))
    except Exception as exc:  # recorded, not raised: see the docstring
        text = str(exc).splitlines()[0] if str(exc) else ""
        row.update(status="failed", error=f"{type(exc).__name__}: {text}"[:500])
        row["profile_seconds"] = round(time.perf_counter() - started, 4)
        return row
    core = result.board.target if result.board is not None else result.target
    instructions = result.predicted.get(core)
    fits = result.fits()
    row.update(target=result.target, ram_bytes=result.ram_bytes, arena_bytes=result.arena_bytes,
               state_bytes=result.state_bytes, weight_bytes=result.weight_bytes,
               flash_bytes_estimate=result.flash_bytes_estimate if result.flash_bytes_estimate is not None else "",
               macs=result.macs, predicted_instructions=round(instructions) if instructions is not None else "",
               latency_ms_estimate=round(result.latency_ms, 4) if result.latency_ms is not None else "",
               profile_seconds=round(time.perf_counter() - started, 4))
    if fits is not None:
        row.update(fits_ram="yes" if fits["ram"] else "no", fits_flash="yes" if fits["flash"] else "no",
                   fits="yes" if fits["ram"] and fits["flash"] else "no")
    return row


@dataclass
class SweepResult:
    out_dir: Path
    csv: Path
    rows: list[dict[str, Any]]  # every row of results.csv, this run's and earlier runs'
    evaluated: int  # candidates evaluated by this run
    skipped: int  # candidates already in results.csv
    seconds: float
    parquet: Path | None = None
    plot: Path | None = None
    html: Path | None = None

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["status"] != "ok"]


def read_results(path: Path) -> list[dict[str, str]]:
    """The complete rows of a results.csv; a row cut short by an interruption is dropped (and its
    candidate re-run), and the file rewritten without it."""
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        header_ok = tuple(reader.fieldnames or ()) == COLUMNS
        rows = list(reader) if header_ok else []
    complete = [r for r in rows if None not in r and all(v is not None for v in r.values()) and r["status"]
                in ("ok", "failed")]
    if not header_ok or len(complete) != len(rows):
        _write_all(path, complete)
    return complete


def _write_all(path: Path, rows: list[dict[str, Any]]) -> None:
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


class _Appender:
    """Appends one row at a time, flushed and fsynced, so a finished result survives a crash."""

    def __init__(self, path: Path) -> None:
        new = not path.is_file()
        self.file = path.open("a", newline="")
        self.writer = csv.DictWriter(self.file, COLUMNS, restval="")
        if new:
            self.writer.writeheader()

    def write(self, row: dict[str, Any]) -> None:
        self.writer.writerow(row)
        self.file.flush()
        os.fsync(self.file.fileno())

    def close(self) -> None:
        self.file.close()


class _Progress:
    """A rich progress bar on a terminal; plain lines (every ~5% and the last) otherwise."""

    def __init__(self, total: int, skipped: int, enabled: bool) -> None:
        self.total, self.done, self.failed = total, 0, 0
        self.enabled = enabled and total > 0
        self.bar: Any = None
        self.step = max(1, total // 20)
        if not self.enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        console = Console(stderr=True)
        if skipped:
            console.print(f"sweep: {skipped} candidates already done (results.csv), {total} to evaluate")
        if console.is_terminal:
            self.bar = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[f]}"),
                                TimeRemainingColumn(), console=console)
            self.task = self.bar.add_task("sweep", total=total, f="")
            self.bar.start()

    def advance(self, row: dict[str, Any]) -> None:
        self.done += 1
        self.failed += row["status"] != "ok"
        if not self.enabled:
            return
        note = f"{self.failed} failed" if self.failed else ""
        if self.bar is not None:
            self.bar.update(self.task, advance=1, f=note)
        elif self.done % self.step == 0 or self.done == self.total:
            print(f"sweep: {self.done}/{self.total} evaluated{', ' + note if note else ''}", file=sys.stderr,
                  flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _check_address(address: str, timeout: float = 5.0) -> None:
    """Fail fast, in one line, on a Ray address nothing listens on (ray.init would retry for a minute)."""
    if address in ("auto", "local"):
        return
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--address {address!r}: expected HOST:PORT (the GCS address `ray start --head` printed), "
                         "ray://HOST:PORT or auto")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise UsageError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}; start it with "
                         "`ray start --head` or drop --address to run locally") from None


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError("nn2c sweep needs Ray: pip install 'nn2c[sweep]'") from None
    return ray


def _ray_rows(todo: list[Candidate], board: str | None, target: str | None, schedule: str, address: str | None,
              workers: int | None) -> Iterable[dict[str, Any]]:
    ray = _import_ray()
    started_here = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                  "configure_logging": False}
        if address:
            kwargs["address"] = address
        elif workers:
            kwargs["num_cpus"] = workers
        try:
            ray.init(**kwargs)
        except (ConnectionError, RuntimeError, TimeoutError) as exc:
            raise UsageError(f"could not start or join Ray{' at ' + address if address else ''}: "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        started_here = True
    try:
        remote = ray.remote(num_cpus=1, max_retries=TASK_RETRIES)(evaluate)
        limit = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        in_flight = 2 * limit  # a few queued per worker; the rest wait here, not in the object store
        pending: dict[Any, Candidate] = {}
        queue = list(todo)
        while queue or pending:
            while queue and len(pending) < in_flight:
                candidate = queue.pop(0)
                pending[remote.remote(candidate, board, target, schedule)] = candidate
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                candidate = pending.pop(ref)
                try:
                    row = ray.get(ref)
                except Exception as exc:  # the task failed beyond Ray's retries (its worker kept dying)
                    row = {"id": candidate.id, "index": candidate.index, **candidate.row_params(),
                           "board": board or "", "status": "failed",
                           "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:500]}
                yield row
    finally:
        if started_here:
            ray.shutdown()


def run_sweep(space: SearchSpace | str | Path, out_dir: str | Path, board: str | None = None,
              target: str | None = None, address: str | None = None, workers: int | None = None,
              use_ray: bool = True, progress: bool = True, report: bool = True,
              on_row: Callable[[dict[str, Any]], None] | None = None) -> SweepResult:
    """Evaluate every candidate of `space` (a SearchSpace or a SPACE.yaml path) not yet in
    OUT_DIR/results.csv, appending a row per candidate as it finishes; then write results.parquet
    (if pyarrow is installed), pareto.png and index.html. `board` / `target` override the space's.
    Ray: the running one if ray.init() was called, else `address` (an existing cluster) or a local one
    with `workers` CPUs. `on_row(row)` is called after each row is on disk."""
    started = time.perf_counter()
    if not isinstance(space, SearchSpace):
        space = load_space(space)
    board = board or space.board
    target = target or space.target
    if board is not None:
        board = get_board(board).name  # an unknown board: one line listing the boards (exit 7)
    if workers is not None and workers < 1:
        raise UsageError(f"--workers {workers}: expected at least 1")
    if address and use_ray:
        _check_address(address)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / RESULTS
    done = {r["id"] for r in read_results(path)}
    every = candidates(space)
    todo = [c for c in every if c.id not in done]
    bar = _Progress(len(todo), len(every) - len(todo), progress)
    appender = _Appender(path)
    try:
        if todo:
            rows: Iterable[dict[str, Any]] = (
                _ray_rows(todo, board, target, space.schedule, address, workers) if use_ray
                else (evaluate(c, board, target, space.schedule) for c in todo))
            for row in rows:
                appender.write(row)
                bar.advance(row)
                if on_row is not None:
                    on_row(row)
    finally:
        appender.close()
        bar.close()
    ids = {c.id for c in every}
    all_rows = [r for r in read_results(path) if r["id"] in ids]
    result = SweepResult(out, path, all_rows, len(todo), len(every) - len(todo), 0.0)
    if report:
        from nn2c.sweep.report import write_reports

        result.parquet, result.plot, result.html = write_reports(all_rows, out, board)
    result.seconds = time.perf_counter() - started
    return result
