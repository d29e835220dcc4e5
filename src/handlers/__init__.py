"""Talking to models: `BaseHandler` (provider settings, the default model) and `LLMInteractionManager`
(the only module that builds pydantic-ai Agents), with output repair and the attempt ledger."""
