"""A one-line progress bar on standard error (no dependency; silent when not a terminal
unless forced)."""

from __future__ import annotations

import sys
from typing import TextIO


class ProgressBar:
    def __init__(
        self,
        total: int,
        label: str = "",
        width: int = 30,
        stream: TextIO | None = None,
        enabled: bool | None = None,
    ):
        self.total = max(total, 1)
        self.label = label
        self.width = width
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.done = 0

    def update(self, done: int, extra: str = "") -> None:
        self.done = done
        if not self.enabled:
            return
        filled = self.width * min(done, self.total) // self.total
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r{self.label}[{bar}] {done}/{self.total} {extra}")
        self.stream.flush()

    def advance(self, step: int = 1, extra: str = "") -> None:
        self.update(self.done + step, extra)

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
