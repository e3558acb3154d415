"""Real distributions for tests: ``*.dist-info`` directories on a temporary path entry.

``importlib.metadata`` reads them exactly as it reads pip-installed ones, so
discovery is exercised for real; the modules they point at are real files.
"""

from __future__ import annotations

import importlib
import re
import textwrap
from pathlib import Path


def make_dist(
    site: Path,
    name: str,
    version: str = "1.0",
    entry_points: dict[str, dict[str, str]] | None = None,
    modules: dict[str, str] | None = None,
) -> Path:
    """Create ``<site>/<name>-<version>.dist-info`` and the given module files."""
    site.mkdir(parents=True, exist_ok=True)
    for relpath, source in (modules or {}).items():
        target = site / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(source), encoding="utf-8")
    folder = re.sub(r"[-_.]+", "_", name)
    info = site / f"{folder}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nA test distribution.\n",
        encoding="utf-8",
    )
    lines = []
    for group, items in (entry_points or {}).items():
        lines.append(f"[{group}]")
        lines.extend(f"{ep} = {value}" for ep, value in items.items())
        lines.append("")
    (info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
    importlib.invalidate_caches()
    return info


def engine_module(
    class_name: str,
    engine_name: str,
    extra: str = "",
    marker: Path | None = None,
    base: str = "ctxengine_host.contract.engine",
) -> str:
    """Source of a module defining a minimal valid engine (optionally touching ``marker``).

    ``base`` is the module ``ContextEngine`` is imported from (a framework plugin uses
    ``agent.context_engine``).
    """
    touch = (
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('imported')\n" if marker else ""
    )
    return (
        touch
        + textwrap.dedent(
            f"""
            from {base} import ContextEngine


            class {class_name}(ContextEngine):
                name = {engine_name!r}
                version = "1.0"

                def update_from_response(self, usage):
                    self.last_prompt_tokens = usage.get("prompt_tokens", 0)

                def should_compress(self, prompt_tokens=None):
                    return False

                def compress(self, messages, current_tokens=None, focus_topic=None):
                    return messages
            """
        )
        + textwrap.dedent(extra)
    )
