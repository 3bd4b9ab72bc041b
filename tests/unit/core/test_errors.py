"""The error hierarchy: every exception the product defines is a ``CharterError``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from datetime import UTC, datetime

import pytest

import shared_lib
from shared_lib.brain.validation import InvalidProposal, validate_proposal
from shared_lib.errors import ArgumentError, CharterError, ConfigError, LLMOutputError
from shared_lib.ops.queries import parse_since
from shared_lib.rollout.report import parse_duration
from shared_lib.tools.registry import ToolRegistry
from shared_lib.wiring.features import tool_registry

# Defined in modules another change owns (shared_lib/layers/base.py, shared_lib/tools/execution.py).
NOT_YET_UNDER_THE_HIERARCHY = {
    "shared_lib.layers.base.FaultInjected",
    "shared_lib.tools.execution.ToolTimeout",
}


def product_exceptions() -> list[str]:
    found = []
    for info in pkgutil.walk_packages(shared_lib.__path__, "shared_lib."):
        if info.name.endswith(".__main__"):  # a program: importing it runs it
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                found.append((f"{module.__name__}.{name}", obj))
    return found


def test_given_every_module_of_shared_lib_then_each_exception_it_defines_is_a_charter_error():
    # GIVEN every exception class defined anywhere in shared_lib
    found = product_exceptions()
    assert len(found) > 20  # the walk reached the packages
    # THEN each one is under the hierarchy of shared_lib.errors
    strays = sorted(
        name
        for name, cls in found
        if not issubclass(cls, CharterError) and name not in NOT_YET_UNDER_THE_HIERARCHY
    )
    assert strays == []


def test_given_an_invalid_answer_then_the_error_is_an_llm_output_error_whose_text_is_the_guidance():
    with pytest.raises(InvalidProposal) as caught:
        validate_proposal("not an object", tool_registry())
    assert isinstance(caught.value, LLMOutputError) and caught.value.code == "parse_error"
    assert str(caught.value) == "the answer must be a JSON object, got str"


@pytest.mark.parametrize(
    "parse",
    [lambda: parse_duration("soon"), lambda: parse_since("yesterday", datetime(2026, 1, 1, tzinfo=UTC))],
)
def test_given_a_bad_argument_then_an_argument_error_that_is_also_a_value_error(parse):
    with pytest.raises(ArgumentError) as caught:
        parse()
    assert isinstance(caught.value, ValueError)


def test_given_a_tool_name_twice_then_the_registry_is_a_configuration_error():
    spec = tool_registry().get("save_memory")
    with pytest.raises(ConfigError, match="registered twice"):
        ToolRegistry([spec, spec])
