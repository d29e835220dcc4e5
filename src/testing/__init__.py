"""Test doubles for atomtask users: a fake provider server and scripted model replies, all offline.

`FakeProviderServer` answers real HTTP requests in the OpenAI and Anthropic wire formats, so the
provider SDKs and pydantic-ai's adapters run unchanged; `scripted_model()` scripts pydantic-ai's
`FunctionModel` without any HTTP. Importing this package imports neither `openai` nor `anthropic`.
"""

from .fake_server import (
    DelayedReply,
    DisconnectReply,
    EmptyReply,
    ErrorReply,
    FakeProviderServer,
    RecordedRequest,
    Reply,
    ServerReply,
    TextReply,
    TokenUsage,
    ToolCallReply,
    TruncatedStreamReply,
)
from .scripted import (
    ReplyFunction,
    ScriptedCall,
    ScriptedModel,
    ScriptedReply,
    ScriptError,
    ScriptExhaustedError,
    scripted_model,
)

__all__ = [
    "DelayedReply",
    "DisconnectReply",
    "EmptyReply",
    "ErrorReply",
    "FakeProviderServer",
    "RecordedRequest",
    "Reply",
    "ReplyFunction",
    "ScriptError",
    "ScriptExhaustedError",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedReply",
    "ServerReply",
    "TextReply",
    "TokenUsage",
    "ToolCallReply",
    "TruncatedStreamReply",
    "scripted_model",
]
