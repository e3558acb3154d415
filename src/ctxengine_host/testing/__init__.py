"""The contract test kit for engine authors (``pip install ctxengine-host[testing]``).

Subclass :class:`ContextEngineContract` and override its ``engine`` fixture;
every rule of the contract an engine is responsible for becomes a test whose
failure message starts with ``[contract: <rule>]``. See docs/authoring.md.
"""

from .contract import ContextEngineContract
from .rules import RULES, ContractViolation
from .schemas import tool_schema_problems

__all__ = ["RULES", "ContextEngineContract", "ContractViolation", "tool_schema_problems"]
