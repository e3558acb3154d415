"""MkDocs hook: the CLI reference page is generated from the real argument parser.

``docs/reference/cli.md`` holds the marker ``<!-- cli-reference -->``; at build time it
is replaced by every command's ``--help`` text, so the page cannot drift from the CLI.
"""

from __future__ import annotations

import argparse

MARKER = "<!-- cli-reference -->"


def _commands() -> list[tuple[str, argparse.ArgumentParser]]:
    from ctxengine_host.cli import build_parser

    def walk(
        name: str, parser: argparse.ArgumentParser
    ) -> list[tuple[str, argparse.ArgumentParser]]:
        found = [(name, parser)]
        for action in parser._actions:  # argparse keeps subcommands only here
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    found += walk(f"{name} {sub_name}", sub)  # `config show` too
        return found

    return walk("ctxengine", build_parser(None))


def on_page_markdown(markdown: str, page, **_: object) -> str:
    if MARKER not in markdown:
        return markdown
    sections = []
    for name, parser in _commands():
        help_text = parser.format_help().replace("```", "'''")
        sections.append(f"## `{name}`\n\n```text\n{help_text}```\n")
    return markdown.replace(MARKER, "\n".join(sections))
