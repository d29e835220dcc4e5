"""Test doubles for atomtask users: a fake provider server and scripted model replies, all offline.

`FakeProviderServer` answers real HTTP requests in the OpenAI (chat completions, responses) and Anthropic
wire formats, and the batch APIs pydantic-ai's `BatchModelRequests` calls (`FakeBatches`: scripted
delays, expiries, errors, cancellation, and a log of what was submitted and paid), so the
provider SDKs and pydantic-ai's adapters run unchanged, and with `server=` (one of `SERVER_MODES`) as a
kind of local OpenAI-compatible server does; `scripted_model()` scripts pydantic-ai's
`FunctionModel` without any HTTP. Importing this package imports neither `openai` nor `anthropic`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atomtask._lazy import lazy_exports

if TYPE_CHECKING:
    from atomtask.errors import ScriptError, ScriptExhaustedError
    from atomtask.testing._batches import FakeBatches, PaidUsage, SubmittedBatch
    from atomtask.testing._replies import (
        DelayedReply,
        DisconnectReply,
        EmptyReply,
        ErrorReply,
        ReceivedFile,
        RecordedRequest,
        Reply,
        ServerReply,
        TextReply,
        TokenUsage,
        ToolCallReply,
        ToolCallsReply,
        ToolResult,
        TruncatedStreamReply,
    )
    from atomtask.testing._scripted import ReplyFunction, ScriptedCall, ScriptedModel, ScriptedReply, scripted_model
    from atomtask.testing._server import FakeProviderServer
    from atomtask.testing._servers import SERVER_MODES

__all__ = [
    "SERVER_MODES",
    "DelayedReply",
    "DisconnectReply",
    "EmptyReply",
    "ErrorReply",
    "FakeBatches",
    "FakeProviderServer",
    "PaidUsage",
    "ReceivedFile",
    "RecordedRequest",
    "Reply",
    "ReplyFunction",
    "ScriptError",
    "ScriptExhaustedError",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedReply",
    "ServerReply",
    "SubmittedBatch",
    "TextReply",
    "TokenUsage",
    "ToolCallReply",
    "ToolCallsReply",
    "ToolResult",
    "TruncatedStreamReply",
    "scripted_model",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
