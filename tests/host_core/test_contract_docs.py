"""Every hook is documented: a docstring with an example and a reference entry.

Like datasette's test of its plugin hooks: adding a hookspec (or a public method
of the base class) without its documentation fails here, not in a user's hands.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from ctxengine_host.contract import hookspecs
from ctxengine_host.contract.engine import ContextEngine

DOCS = Path(__file__).resolve().parents[2] / "docs"
HOOKS = [(spec, name) for spec in (hookspecs.ContractSpec, hookspecs.PluginSpec)
         for name in vars(spec) if not name.startswith("_")]  # fmt: skip


@pytest.mark.parametrize(("spec", "name"), HOOKS, ids=[name for _, name in HOOKS])
def test_every_hookspec_has_a_docstring_with_an_example(spec, name):
    doc = inspect.getdoc(getattr(spec, name)) or ""
    summary = doc.split("\n", 1)[0]
    assert summary.endswith((".", "?", ")")), f"{name}: first line is a sentence"
    assert re.search(r"^Example:\n\s+```python\n.+?```", doc, re.S | re.M), (
        f"{spec.__name__}.{name} needs an 'Example:' section with a python block"
    )
    assert f"def {name}(" in doc, f"{name}: the example implements the hook"


def test_the_reference_pages_render_the_specs_and_the_base_class():
    reference = (DOCS / "reference" / "contract.md").read_text(encoding="utf-8")
    for target in (
        "ctxengine_host.contract.hookspecs.ContractSpec",
        "ctxengine_host.contract.hookspecs.PluginSpec",
        "ctxengine_host.contract.engine.ContextEngine",
    ):
        assert f"::: {target}" in reference, target


def test_every_contract_method_is_in_the_authoring_guide_and_the_base_class():
    guide = (DOCS / "authoring.md").read_text(encoding="utf-8")
    for name in hookspecs.CONTRACT_METHODS:
        assert f"`{name}(" in guide, f"docs/authoring.md's method table lacks {name}"
        method = getattr(ContextEngine, name, None)
        assert method is not None and inspect.getdoc(method), f"ContextEngine.{name} docstring"
