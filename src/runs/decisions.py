"""Approval decisions: how a waiting run is marked, how a decision travels to it, what it writes to the state.

A run at an approval step sets its DBOS event `atomtask.waiting` (the step and the message built from
the state) and waits for a DBOS message on topic `atomtask.approval`; `approve` (any process) sends
one. Without a decision within the step's `timeout`, `on_timeout` decides. The decision goes to the
step's `output:` field: `approved` alone for a `bool` field, else the whole `ApprovalDecision`.
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from typing import Any

from atomtask.system.workflow_steps import ApprovalDecision, Step

__all__ = ["APPROVAL_TOPIC", "WAITING_EVENT", "decision", "timed_out", "value", "wait", "waiter", "waiter_alive"]

WAITING_EVENT = "atomtask.waiting"
APPROVAL_TOPIC = "atomtask.approval"
#: How long one wait lasts when the step has no `timeout` (it waits again, as long as it takes).
_WAIT_SLICE = 3600.0


def decision(approved: bool, note: str | None = None, by: str | None = None) -> dict[str, Any]:
    """The message `approve` sends: the decision, a note, who decided, and when."""
    return {"approved": approved, "note": note, "by": by, "at": datetime.now(UTC).isoformat()}


def waiter() -> dict[str, Any]:
    """Who waits: this process (host and pid), stored with the wait so `approve` can tell whether it still runs."""
    return {"host": socket.gethostname(), "pid": os.getpid()}


def waiter_alive(waiting: dict[str, Any]) -> bool | None:
    """Whether the process that waits still runs: None when unknown (another host, or not recorded)."""
    pid = waiting.get("pid")
    if not isinstance(pid, int) or waiting.get("host") != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process under that pid
        return None
    return True


def timed_out(step: Step) -> dict[str, Any]:
    """The decision of `on_timeout` once the step's `timeout` has passed without one."""
    note = f"no decision within {step.timeout:g}s: `on_timeout: {step.on_timeout}`"
    return {"approved": step.on_timeout == "approve", "note": note, "by": None, "at": datetime.now(UTC).isoformat()}


def value(output_type: Any, received: dict[str, Any]) -> Any:
    """What the decision writes to the output field: a `bool`, or an `ApprovalDecision`."""
    if output_type is bool:
        return bool(received["approved"])
    return ApprovalDecision.model_validate(received)


async def wait(timeout: float | None) -> dict[str, Any] | None:
    """The decision sent to the run (recorded by DBOS: on resume it comes back, not waited for); None: timed out."""
    from dbos import DBOS

    while True:
        received = await DBOS.recv_async(APPROVAL_TOPIC, timeout_seconds=timeout if timeout else _WAIT_SLICE)
        if received is not None or timeout:
            return received if isinstance(received, dict) else None
