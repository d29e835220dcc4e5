"""A batch's model may be a model alias: checked before anything runs, each item run on the model it stands for."""

from __future__ import annotations

import pytest
from atomtask import ConfigurationError, TaskStatus, TaskSystem, Template
from atomtask.testing import scripted_model


def test_a_batch_runs_on_the_model_an_alias_stands_for() -> None:
    """`batch_sync(model="fast")` runs every item on the aliased model; `model="fsat"` raises before any item."""
    fast = scripted_model("one", "two", model_name="fast")
    system = TaskSystem(model_aliases={"fast": fast})
    system.register(Template(name="echo", params={"word": "str"}, instructions="Repeat {{word}}"))
    results = system.batch_sync("echo", [{"word": "a"}, {"word": "b"}], model="fast", concurrency=1)
    assert [TaskStatus.COMPLETE, TaskStatus.COMPLETE] == [item.status for item in results]
    assert ["one", "two"] == sorted(str(item.output) for item in results)
    assert 2 == len(fast.calls)
    with pytest.raises(ConfigurationError, match=r"Model 'fsat' in `model=` of this batch .* Did you mean 'fast'"):
        system.batch_sync("echo", [{"word": "a"}], model="fsat")
