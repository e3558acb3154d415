"""Hatch build hook shared by the per-distribution projects in packages/.

Each distribution's code lives in ../../src/<package>. A regular wheel maps it
in; an editable install must not (a copied snapshot in site-packages would
shadow the source directory that ``dev-mode-dirs`` puts on the path).
"""

from __future__ import annotations

import os

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class SourcePackageHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if version == "editable":
            return
        package = self.config["package"]
        source = os.path.normpath(os.path.join(self.root, "..", "..", "src", package))
        build_data["force_include"][source] = package
