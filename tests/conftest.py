"""Shared test configuration: offline by construction."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from pydantic_ai import models

# No test reaches a real provider: real model classes refuse to send requests unless a test opts in
# (only the tests that talk to the local fake provider server do, with `allow_model_requests`).
models.ALLOW_MODEL_REQUESTS = False

REPO = Path(__file__).resolve().parent.parent

# Durable workflow runs keep their store under $ATOMTASK_HOME: one throwaway folder per test session, never
# the developer's own (a test that needs a store of its own passes `--db` / `db=`).
os.environ["ATOMTASK_HOME"] = tempfile.mkdtemp(prefix="atomtask-home-")
# `atomtask check` keeps its cache under $ATOMTASK_CACHE_DIR: likewise never the developer's own.
os.environ["ATOMTASK_CACHE_DIR"] = tempfile.mkdtemp(prefix="atomtask-cache-")
TEMPLATES = REPO / "templates"


@pytest.fixture(autouse=True)
def _clean_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test picks up a model or provider setting from the developer's shell."""
    for name in (
        "ATOMTASK_MODEL",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ATOMTASK_OTEL",
        "ATOMTASK_OTEL_CONTENT",
        "ATOMTASK_IMPORTABLE",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _reset_structlog() -> Iterator[None]:
    """The CLI configures structlog globally; every test starts from the defaults."""
    yield
    structlog.reset_defaults()


@pytest.fixture(autouse=True, scope="module")
def _no_dbos_left_running() -> Iterator[None]:
    """A module that ran a durable run in this process shuts DBOS down after it.

    DBOS's background threads draw from the global `random` (jitter) while they run, which a later
    Hypothesis test in the same process would see change under its strategies.
    """
    yield
    import sys

    store = sys.modules.get("atomtask.runs._store")
    if store is not None:
        store.shutdown()


@pytest.fixture
def allow_model_requests() -> Iterator[None]:
    """Let real model classes send requests (to the local fake server only) within one test."""
    with models.override_allow_model_requests(True):
        yield


@pytest.fixture
def templates_dir() -> Path:
    return TEMPLATES
