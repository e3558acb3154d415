"""Contract validation: structure, names, the parameter rule, info attributes, requirements."""

from __future__ import annotations

from typing import Any

from ctxengine_host.contract.engine import ContextEngine
from ctxengine_host.contract.models import HOST_CAPABILITIES
from ctxengine_host.contract.signatures import call_declared
from ctxengine_host.discovery.validation import engine_info, validate_engine


class Good(ContextEngine):
    name = "good"

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return messages


def test_a_valid_engine_has_no_problems():
    assert validate_engine(Good(), "good") == []
    assert engine_info(Good()).name == "good"


def test_name_must_equal_the_registered_id():
    [problem] = validate_engine(Good(), "other")
    assert "name='good'" in problem and "'other'" in problem


def test_structurally_complete_non_subclass_is_accepted():
    class Duck:
        name = "duck"

        def update_from_response(self, usage): ...
        def should_compress(self, prompt_tokens=None): ...
        def compress(self, messages): ...

    assert validate_engine(Duck(), "duck") == []


def test_incomplete_non_subclass_is_rejected_naming_what_lacks():
    class Half:
        name = "half"

        def compress(self, messages): ...

    [problem] = validate_engine(Half(), "half")
    assert "should_compress" in problem and "update_from_response" in problem


def test_misspelled_defaulted_parameter_is_an_error():
    class Typo(Good):
        def compress(self, messages, current_tokens=None, focus=None):
            return messages

    [problem] = validate_engine(Typo(), "good")
    assert "compress() declares parameter(s) focus" in problem


def test_keyword_only_parameters_are_checked_and_passed_by_name():
    seen: dict[str, Any] = {}

    class KwOnly(Good):
        def select_context(self, request_messages, *, budget_tokens=0, incoming_message=None):
            seen.update(budget_tokens=budget_tokens, incoming_message=incoming_message)
            return None

    class KwOnlyTypo(Good):
        def select_context(self, request_messages, *, budget=0):
            return None

    engine = KwOnly()
    assert validate_engine(engine, "good") == []
    available = {
        "request_messages": [],
        "budget_tokens": 99,
        "incoming_message": {"role": "user"},
        "conversation_messages": [],  # not declared: not passed
        "runtime_settings": None,
    }
    call_declared(engine.select_context, available)
    assert seen == {"budget_tokens": 99, "incoming_message": {"role": "user"}}
    [problem] = validate_engine(KwOnlyTypo(), "good")
    assert "select_context() declares parameter(s) budget" in problem


def test_inherited_defaults_are_not_checked_and_subset_parameters_are_fine():
    class Subset(Good):
        def update_model(self, model, context_length):
            self.context_length = context_length

    assert validate_engine(Subset(), "good") == []


def test_info_attributes_must_be_well_formed():
    class BadInfo(Good):
        version = 2
        owns_compaction = "yes"
        turn_maintenance_mode = "sometimes"
        config_model = dict

    problems = " | ".join(validate_engine(BadInfo(), "good"))
    assert "'version' must be a str" in problems
    assert "'owns_compaction' must be a bool" in problems
    assert "turn_maintenance_mode" in problems and "config_model" in problems


def test_malformed_host_requirements():
    class BadReq(Good):
        host_requirements = {"maintain": {"capabilities": "maintain"}}

    [problem] = validate_engine(BadReq(), "good")
    assert "host_requirements['maintain']" in problem


def test_host_requirements_against_capabilities_fail_closed():
    class Needs(Good):
        host_requirements = {
            "assemble": {"capabilities": ["assemble-before-prompt"], "message": "assembles"},
            "spawn": {"capabilities": ["subagents", "teleport"]},
        }

    assert validate_engine(Needs(), "good", HOST_CAPABILITIES) == [
        f"engine 'good' needs host capability teleport for 'spawn' (this host offers: "
        f"{', '.join(sorted(HOST_CAPABILITIES))})"
    ]
    problems = validate_engine(Needs(), "good", {"subagents", "teleport"})
    assert len(problems) == 1 and "assemble-before-prompt for 'assemble': assembles" in problems[0]


def test_name_property_raising_is_reported():
    class Raising(Good):
        @property
        def name(self):
            raise RuntimeError("no name yet")

    [problem] = validate_engine(Raising(), "good")
    assert "RuntimeError: no name yet" in problem
