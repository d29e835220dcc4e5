"""ModelRegistry: names for Pydantic classes."""

from __future__ import annotations

import re

import pytest
from atomtask import DuplicateNameError, SchemaError
from atomtask.schemas import ModelRegistry
from pydantic import BaseModel


class Contact(BaseModel):
    name: str


class OtherContact(BaseModel):
    name: str


def test_register_defaults_to_the_class_name() -> None:
    """`register(cls)` uses the class name and returns the class."""
    registry = ModelRegistry()
    assert Contact is registry.register(Contact)
    assert Contact is registry.get("Contact")
    assert ["Contact"] == registry.names()


def test_register_under_another_name() -> None:
    """A class may be registered under an explicit name."""
    registry = ModelRegistry()
    registry.register(Contact, "Person")
    assert Contact is registry.get("Person")


def test_different_class_under_taken_name_needs_replace() -> None:
    """A different class under a taken name raises unless `replace=True`; the same class is a no-op."""
    registry = ModelRegistry()
    registry.register(Contact)
    registry.register(Contact)
    with pytest.raises(DuplicateNameError, match="'Contact' is already registered"):
        registry.register(OtherContact, "Contact")
    registry.register(OtherContact, "Contact", replace=True)
    assert OtherContact is registry.get("Contact")


def test_unknown_name_suggests() -> None:
    """`get` of an unknown name raises SchemaError with near names."""
    registry = ModelRegistry()
    registry.register(Contact)
    with pytest.raises(SchemaError, match="Did you mean 'Contact'"):
        registry.get("Contcat")


def test_only_pydantic_models_can_be_registered() -> None:
    """A non-model class is refused with the fix."""
    registry = ModelRegistry()
    with pytest.raises(SchemaError, match=re.escape("subclass `pydantic.BaseModel`")):
        registry.register(dict)  # type: ignore[type-var]  # the point of the test


class Other(BaseModel):
    x: int


def test_an_overridable_name_is_taken_over_by_another_class() -> None:
    """A default registered `overridable` gives its name to the next class, which then holds it firmly."""
    registry = ModelRegistry()
    registry.register(Other, "Thing", overridable=True)
    registry.register(Contact, "Thing")
    assert Contact is registry.get("Thing")
    with pytest.raises(DuplicateNameError):
        registry.register(Other, "Thing")


def test_an_overridable_registration_never_displaces_a_class() -> None:
    """Registering a default under a name already taken keeps the class there."""
    registry = ModelRegistry()
    registry.register(Contact, "Thing")
    registry.register(Other, "Thing", overridable=True)
    assert Contact is registry.get("Thing")
