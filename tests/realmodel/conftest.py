"""The real-model tests talk to a local server at `$ATOMTASK_REALMODEL_URL` (`scripts/local-model.sh serve`).

With no server answering there they are left out of the run (deselected, with one line saying why), never
run against anything else: the README's test command and `.ci/run` leave them out by their mark anyway.
"""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Iterator

import pytest
from pydantic_ai import models

URL_ENV = "ATOMTASK_REALMODEL_URL"


def _reachable(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/models", timeout=3):
            return True
    except OSError:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    marked = [item for item in items if item.get_closest_marker("realmodel") is not None]
    expression = str(config.getoption("markexpr") or "")
    if not marked or "realmodel" not in expression.replace("not realmodel", ""):
        return  # not asked for (the README's command, `.ci/run`): the mark expression leaves them out, silently
    url = os.environ.get(URL_ENV)
    if url and _reachable(url):
        return
    config.hook.pytest_deselected(items=marked)
    items[:] = [item for item in items if item.get_closest_marker("realmodel") is None]
    reason = f"${URL_ENV} is not set" if not url else f"no server answers at {url}"
    print(f"\nrealmodel tests left out: {reason} (start one with `scripts/local-model.sh serve`)")


@pytest.fixture
def realmodel_url() -> Iterator[str]:
    with models.override_allow_model_requests(True):
        yield os.environ[URL_ENV]
