"""The committed pin tests/expected_backend_symbols.txt: every seam symbol, LC_ALL=C sorted.

`check` compares a header's model with the pin and names every symbol added or removed with its
group. The group of a removed symbol is no longer in the header; it is looked up in reference
headers (the repository's header and its committed version), else reported as unknown.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import SeamError
from .model import Model

WRITE_COMMAND = "python -m build_tools pins --write"


def pinned(model: Model) -> list[str]:
    """The seam's symbol names in LC_ALL=C (byte) order."""
    return sorted(model.symbols, key=lambda n: n.encode())


def render(model: Model) -> str:
    """The pin file's text."""
    head = f"# generated from {os.path.basename(model.path)} by: {WRITE_COMMAND}"
    return "\n".join([head, *pinned(model)]) + "\n"


def read(text: str) -> list[str]:
    """Names in a pin file's text, in file order (comment and blank lines dropped)."""
    return [s for line in text.splitlines() if (s := line.strip()) and not s.startswith("#")]


@dataclass(frozen=True)
class Diff:
    added: tuple[str, ...]
    removed: tuple[str, ...]
    canonical: bool   # the pin text is exactly what `render` writes

    @property
    def ok(self) -> bool:
        return not self.added and not self.removed and self.canonical


def diff(model: Model, pin_text: str) -> Diff:
    """Symbols in the header but not the pin (added) and in the pin but not the header (removed)."""
    names, pin = set(model.symbols), read(pin_text)
    return Diff(tuple(n for n in pinned(model) if n not in set(pin)),
                tuple(sorted(set(pin) - names, key=str.encode)),
                pin_text == render(model))


def report(model: Model, d: Diff, pin_path: Path, references: list[Model]) -> str:
    """What `pins --check` prints when header and pin disagree."""
    groups = {f.name: f"group {f.group}, since {f.since}" for f in model.functions}
    lines = [f"{model.path} and {pin_path} disagree:"]
    lines += [f"  added:   {n} ({groups[n]})" for n in d.added]
    for n in d.removed:
        where = next((f"was group {f.group}, since {f.since} in {r.path}"
                      for r in references for f in r.functions if f.name == n), "group unknown")
        lines.append(f"  removed: {n} ({where})")
    if not d.added and not d.removed:
        lines.append("  the pin is not in its canonical form (header comment, one name a line, LC_ALL=C sorted)")
    lines.append(f"run `{WRITE_COMMAND}` if the change is intended")
    return "\n".join(lines)


def references(header: Path, default_header: Path) -> list[Model]:
    """Models of the repository's header (when another one is checked) and of its committed version."""
    from .parse import parse_text

    out: list[Model] = []
    texts: list[tuple[str, str]] = []
    if header.resolve() != default_header.resolve() and default_header.exists():
        texts.append((default_header.read_text(encoding="utf-8"), str(default_header)))
    try:
        git = subprocess.run(["git", "show", f"HEAD:./{default_header.name}"], cwd=default_header.parent,
                             capture_output=True, text=True, timeout=30)
        if git.returncode == 0:
            texts.append((git.stdout, f"HEAD:{default_header.name}"))
    except (OSError, subprocess.SubprocessError):
        pass
    for text, name in texts:
        try:
            out.append(parse_text(text, name))
        except SeamError:
            continue
    return out
