"""Which files an agent edited, and which symbols it worked on.

Collected from tool calls (their arguments name the paths; an editing tool or a
shell command that writes marks them edited), from the definitions in what the
agent read of a file it went on to edit, and from the identifiers it named in
backticks. Rendered as two short lines of the summary's "Files and symbols"
section (``edited: ...``, ``symbols: ...``; definitions in files only read fill the
symbols the edits leave free) and parsed back from a previous summary, so the lists
accumulate over compactions at a bounded size (newest kept).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .features import PATH_SUFFIXES

MAX_EDITED = 8
MAX_SYMBOLS = 6
_EDIT_TOOL_RE = re.compile(r"(?i)edit|write|patch|replace|create|insert|apply|rename|move")
_SHELL_WRITE_RE = re.compile(r"\bsed\s+-i|(?<![<>&\d])>{1,2}\s*[\w./-]|\btee\b|\b(?:mv|cp|patch)\s")
_PATH_RE = re.compile(r"(?<![\w/.:-])(?:\.{0,2}/)?(?:[\w.-]+/)*[\w-][\w.-]*\.([A-Za-z]{1,8})\b")
_DEF_RE = re.compile(
    r"^[ \t]*(?:async\s+)?(?:def|class|func|function|fn)\s+([A-Za-z_]\w{2,})", re.M
)
_TICK_RE = re.compile(r"`([A-Za-z_][\w.]{2,60})(?:\(\))?`")
_LINE_RE = re.compile(r"^(edited|symbols): (.+)$")


def paths_in(text: str) -> list[str]:
    """File paths in ``text`` (a known suffix required), in order, without repeats."""
    found = (m.group(0) for m in _PATH_RE.finditer(text) if m.group(1).lower() in PATH_SUFFIXES)
    return list(dict.fromkeys(p.removeprefix("./") for p in found))


def _is_symbol(name: str) -> bool:
    return "_" in name or any(c.isupper() for c in name[1:]) or "." in name


@dataclass
class FileLedger:
    """Paths and symbols with the order in which they were last seen."""

    edited: dict[str, int] = field(default_factory=dict)
    symbols: dict[str, int] = field(default_factory=dict)
    _pending: dict[str, list[str]] = field(default_factory=dict)  # path -> symbols read
    _order: int = 0

    def _tick(self) -> int:
        self._order += 1
        return self._order

    def call(self, name: str, arguments: str) -> list[str]:
        """Record a tool call; returns the paths it names."""
        paths = paths_in(arguments)
        writes = bool(_EDIT_TOOL_RE.search(name)) or bool(_SHELL_WRITE_RE.search(arguments))
        for path in paths if writes else ():
            self.edited[path] = self._tick()
            for symbol in self._pending.pop(path, ()):
                self.symbols[symbol] = self._tick()
        return paths

    def output(self, text: str, paths: list[str]) -> None:
        """Record a tool output: definitions in a read file wait for that file's edit."""
        if not paths:
            return
        names = list(dict.fromkeys(_DEF_RE.findall(text[:20_000])))[:MAX_SYMBOLS]
        for path in paths[:1]:
            if path in self.edited:
                for symbol in names:
                    self.symbols[symbol] = self._tick()
            elif names:
                self._pending.pop(path, None)  # re-read: newest
                self._pending[path] = names

    def mentioned(self, text: str) -> None:
        """Identifiers the agent named in backticks."""
        for name in _TICK_RE.findall(text):
            if _is_symbol(name) and name.rsplit(".", 1)[-1].lower() not in PATH_SUFFIXES:
                self.symbols[name] = self._tick()

    def merge_line(self, text: str) -> bool:
        """Read back one ``edited: ...`` / ``symbols: ...`` line."""
        match = _LINE_RE.match(text.strip())
        if not match:
            return False
        target = getattr(self, match.group(1))
        for item in match.group(2).split(", "):
            if item.strip() and item.strip() not in target:
                target[item.strip()] = self._tick() - 1_000_000  # older than anything new
        return True

    def _symbols_shown(self) -> dict[str, int]:
        """The symbols worked on, then in the slots they leave free the definitions of
        files only read, newest read first: the function an agent looked at is often what a
        later question names. They rank below every symbol worked on."""
        free = MAX_SYMBOLS - len(self.symbols)
        if free <= 0 or not self._pending:
            return self.symbols
        read = (n for names in reversed(self._pending.values()) for n in names)
        extra = [n for n in dict.fromkeys(read) if n not in self.symbols][:free]
        return {**{n: -2_000_000 + rank for rank, n in enumerate(extra)}, **self.symbols}

    def lines(self, said: str = "") -> list[str]:
        """The section's lines, newest items kept within the caps; items the rest of the
        summary (``said``) already names are left out."""
        out = []
        for label, items, cap in (
            ("edited", self.edited, MAX_EDITED),
            ("symbols", self._symbols_shown(), MAX_SYMBOLS),
        ):
            newest = [i for i in sorted(items, key=items.__getitem__)[-cap:] if i not in said]
            if newest:
                out.append(f"{label}: {', '.join(newest)}")
        return out
