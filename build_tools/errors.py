"""The one error type of the generator: a reason tied to a file and a line."""

from __future__ import annotations


class SeamError(Exception):
    """The header holds something the generator does not understand; reads ``file:line: reason``."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path = str(path)
        self.line = line
        self.reason = reason
