"""What the CLI tells a person while it works: a spinner per long step on a terminal, nothing in pipes.

Everything goes to stderr, so stdout stays clean for --json and for text a script may parse.
A rich status spinner is shown only when stderr is a terminal (rich's Console detects pipes, CI
logs and click's test runner) and the user did not ask for --quiet. With -v each finished step is
also logged with its duration, on a terminal or not.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any


class Progress:
    def __init__(self, quiet: bool = False, verbose: int = 0, file: IO[str] | None = None) -> None:
        from rich.console import Console

        self.quiet = quiet
        self.verbose = 0 if quiet else verbose
        self.console = Console(file=file, stderr=file is None, highlight=False, soft_wrap=True)
        self.live = self.console.is_terminal and not quiet
        self._status: Any = None
        self._step: str | None = None
        self._started = 0.0

    # --- one step at a time -------------------------------------------------------------
    @contextmanager
    def step(self, text: str) -> Iterator[None]:
        """A spinner with `text` while the block runs (terminal only); -v logs its duration."""
        self.update(text)
        try:
            yield
        finally:
            self.done()

    def update(self, text: str) -> None:
        """Start the next step (ends the current one): usable as compile_model's progress callback."""
        self._finish_step()
        self._step, self._started = text, time.perf_counter()
        if not self.live:
            return
        if self._status is None:
            self._status = self.console.status(f"{text}...", spinner="dots")
            self._status.start()
        else:
            self._status.update(f"{text}...")

    def done(self) -> None:
        self._finish_step()
        if self._status is not None:
            self._status.stop()
            self._status = None

    def _finish_step(self) -> None:
        if self._step is not None and self.verbose:
            self.console.print(f"nn2c: {self._step} ({time.perf_counter() - self._started:.2f} s)")
        self._step = None

    # --- messages -----------------------------------------------------------------------
    def detail(self, text: str) -> None:
        """A line shown only with -v (on stderr)."""
        if self.verbose:
            self.console.print(text, markup=False)
