"""Provider compatibility: what pydantic-ai will do to an output schema for a given model (P3xx).

Nothing here is a hand-kept list of provider quirks. For a model string we take pydantic-ai's model
profile (from `pydantic_ai.profiles`, which imports no provider SDK), run the profile's JSON Schema
transformer on the output schema exactly as pydantic-ai does before a request, and diff the result
against the schema we declared:

- the profile says the output mode is unsupported -> pydantic-ai would raise at call time (P301);
- the transformer raises -> the provider cannot take the schema (P302);
- the transformer finds the schema not strict-compatible -> strict mode stays off, the provider does
  not enforce the schema (P303); why is found by diffing against a `strict=True` walk;
- a keyword present in our schema is missing after the transform (P304), or was folded into the
  description (P305), or `additionalProperties` of a dict field is gone (P306).

A template's `image`, `document` and `audio` parameters are checked against the same profile's
file-input flags (`supports_image_input`, ...) and against what the provider's pydantic-ai model class
cannot send in a user prompt whatever the model (P307, `media_issues`).

The only tables are the routing from a model-string prefix to the profile function pydantic-ai's own
provider class uses, and from a prefix to the file kinds its model class refuses (provider and model
classes import their SDKs, so they cannot be asked directly; a test pins the second table against the
model classes whose SDKs are installed).

The analysis can run in a helper process, so `atomtask check` does not wait for pydantic-ai, which
takes about a second to import and is needed for two things only: the provider prefixes a model string
may use and this analysis. The command starts `python -m atomtask.lint._compat` when it first has files
to check (`ProcessAnalyses`); the helper imports pydantic-ai while the check goes on, sends the known
providers, then analyses each schema as it arrives: the very same function, on the same JSON Schema
(JSON keeps it exactly), so the findings are the ones an in-process check makes (`InlineAnalyses`).
Nothing depends on the helper: if it cannot start, dies or answers nothing, the check asks pydantic-ai
in its own process. The protocol is one JSON document per line: the helper writes `{"providers": [...]}`
first, then `[index, [[code, message, owner, field], ...]]` for each request `[index, schema, model,
mode]` it reads (`[index, null, model, "media", [[param, kind], ...]]` for a template's media parameters),
until its input ends.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any, Protocol, TypeAlias

import attrs

if TYPE_CHECKING:
    from pydantic_ai.profiles import ModelProfile

__all__ = [
    "Analyses",
    "CompatIssue",
    "InlineAnalyses",
    "ProcessAnalyses",
    "ResolvedProfile",
    "analyse",
    "main",
    "media_issues",
    "profile_for",
]

JsonSchema: TypeAlias = dict[str, Any]

# JSON Schema annotation keywords (the spec's, not a provider's): dropping them changes nothing the
# provider enforces, so their removal is not reported.
_ANNOTATIONS = frozenset({"title", "$schema", "$comment", "examples", "discriminator", "$id", "readOnly", "writeOnly"})
_STRUCTURE = frozenset({"properties", "items", "anyOf", "oneOf", "allOf", "$defs", "definitions", "$ref"})


@attrs.frozen(kw_only=True)
class CompatIssue:
    """One compatibility finding, at a schema (`owner`, a class title) and optionally one of its fields."""

    code: str
    message: str
    owner: str | None
    field: str | None


# ---------------------------------------------------------------------------------------------------------------
# Profiles


def _openai_first_party(name: str) -> ModelProfile:
    from pydantic_ai.profiles import merge_profile
    from pydantic_ai.profiles import openai as openai_profiles

    # What `OpenAIProvider.model_profile` does: its own transformer (strict mode there accepts length
    # constraints), the conservative one for fine-tuned models.
    transformer = getattr(openai_profiles, "_OpenAIJsonSchemaTransformer", openai_profiles.OpenAIJsonSchemaTransformer)
    if name.startswith("ft:"):
        transformer = openai_profiles.OpenAIJsonSchemaTransformer
    return merge_profile(openai_profiles.openai_model_profile(name), {"json_schema_transformer": transformer})


def _family(name: str) -> ModelProfile | None:
    """The model family's profile, for providers that serve many families (by the model name's prefix)."""
    from pydantic_ai.profiles.anthropic import anthropic_model_profile
    from pydantic_ai.profiles.cohere import cohere_model_profile
    from pydantic_ai.profiles.deepseek import deepseek_model_profile
    from pydantic_ai.profiles.google import google_model_profile
    from pydantic_ai.profiles.grok import grok_model_profile
    from pydantic_ai.profiles.harmony import harmony_model_profile
    from pydantic_ai.profiles.meta import meta_model_profile
    from pydantic_ai.profiles.mistral import mistral_model_profile
    from pydantic_ai.profiles.moonshotai import moonshotai_model_profile
    from pydantic_ai.profiles.openai import openai_model_profile
    from pydantic_ai.profiles.qwen import qwen_model_profile

    families: list[tuple[tuple[str, ...], Callable[[str], ModelProfile | None]]] = [
        (("llama", "meta-llama"), meta_model_profile),
        (("gemma", "gemini"), google_model_profile),
        (("qwen", "qwq"), qwen_model_profile),
        (("deepseek",), deepseek_model_profile),
        (("mistral", "mixtral", "codestral", "magistral"), mistral_model_profile),
        (("command",), cohere_model_profile),
        (("grok",), grok_model_profile),
        (("gpt-oss",), harmony_model_profile),
        (("gpt", "o1", "o3", "o4"), openai_model_profile),
        (("claude",), anthropic_model_profile),
        (("kimi", "moonshot"), moonshotai_model_profile),
    ]
    bare = name.lower().rsplit("/", 1)[-1]
    for prefixes, profile in families:
        if bare.startswith(prefixes):
            return profile(bare)
    return None


def _openai_compatible(name: str) -> ModelProfile:
    from pydantic_ai.profiles import merge_profile
    from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer

    # As the OpenAI-compatible providers do: the OpenAI transformer unless the family sets its own.
    return merge_profile({"json_schema_transformer": OpenAIJsonSchemaTransformer}, _family(name))


def _embedded(name: str) -> ModelProfile:
    from atomtask.handlers._synthetic import synthetic_profile

    return synthetic_profile()


def _simple(module: str, function: str) -> Callable[[str], ModelProfile | None]:
    def profile(name: str) -> ModelProfile | None:
        import importlib

        found: Callable[[str], ModelProfile | None] = getattr(
            importlib.import_module(f"pydantic_ai.profiles.{module}"), function
        )
        return found(name)

    return profile


# Provider prefix -> (profile function, exact). "Exact" routes call the very profile function the
# provider class uses; the others (OpenAI-compatible hosts, multi-family clouds) pick the model
# family's profile by name, as those providers do, but the host may override flags: they never
# yield errors, only warnings.
_ROUTES: dict[str, tuple[Callable[[str], ModelProfile | None], bool]] = {
    "openai": (_openai_first_party, True),
    "openai-chat": (_openai_first_party, True),
    "openai-responses": (_openai_first_party, True),
    "google": (_simple("google", "google_model_profile"), True),
    "google-cloud": (_simple("google", "google_model_profile"), True),
    "anthropic": (_simple("anthropic", "anthropic_model_profile"), True),
    "mistral": (_simple("mistral", "mistral_model_profile"), True),
    "cohere": (_simple("cohere", "cohere_model_profile"), True),
    "groq": (_family, False),
    "atomtask": (_embedded, True),  # `atomtask:synthetic`, the embedded offline model
    "bedrock": (_family, False),
}


@attrs.frozen(kw_only=True)
class ResolvedProfile:
    """pydantic-ai's profile for a model string, and whether it is the provider's own or the family's."""

    profile: ModelProfile
    exact: bool


@functools.cache
def profile_for(model: str) -> ResolvedProfile | None:
    """pydantic-ai's resolved profile for a model string, or None for `test` and strings without a provider."""
    if ":" not in model:
        return None
    provider, name = model.split(":", 1)
    provider = provider.removeprefix("gateway/")
    from pydantic_ai.profiles import DEFAULT_PROFILE, merge_profile

    route, exact = _ROUTES.get(provider, (_openai_compatible, False))
    return ResolvedProfile(profile=merge_profile(DEFAULT_PROFILE, route(name)), exact=exact)


# ---------------------------------------------------------------------------------------------------------------
# Media inputs

# What the model class pydantic-ai builds for a provider prefix cannot send in a user prompt, whatever the model
# (its `_unsupported_file_inputs`, as `pydantic_ai.models.infer_model` picks the class); any other prefix is an
# OpenAI-compatible host served by `OpenAIChatModel`. Pinned against the installed classes by tests/lint/test_compat.py.
_RESPONSES = frozenset({"audio", "video"})
ADAPTER_REFUSES: dict[str, frozenset[str]] = {
    "openai": _RESPONSES,
    "openai-responses": _RESPONSES,
    "azure-responses": _RESPONSES,
    "meta": _RESPONSES,
    "openai-chatgpt": _RESPONSES,
    "openai-chat": frozenset({"video"}),
    "openrouter": frozenset(),
    "google": frozenset(),
    "google-cloud": frozenset(),
    "anthropic": frozenset({"audio", "video"}),
    "mistral": frozenset({"audio", "video"}),
    "xai": frozenset({"audio", "video"}),
    "bedrock": frozenset({"audio"}),
    "groq": frozenset({"document", "audio", "video"}),
    "huggingface": frozenset({"document", "audio", "video"}),
    "cohere": frozenset({"image", "document", "audio", "video"}),
    "atomtask": frozenset(),  # `atomtask:synthetic` answers without reading any of it
}
_OPENAI_COMPATIBLE_REFUSES = frozenset({"video"})
_PLURAL = {"image": "images", "document": "documents", "audio": "audio files"}


def media_issues(model: str, params: list[tuple[str, str]]) -> list[CompatIssue]:
    """P307 for each `(param, kind)` whose kind `model` cannot take: by its model class, or its profile's flags.

    A document's media type is known only when the task runs (Anthropic, for one, reads PDFs and plain text
    but not Word files): that is checked then, with the same flags.
    """
    resolved = profile_for(model)
    if resolved is None:
        return []
    from atomtask.system._media import media_refusal

    provider, name = model.split(":", 1)
    provider = provider.removeprefix("gateway/")
    refused_by_class = ADAPTER_REFUSES.get(provider, _OPENAI_COMPATIBLE_REFUSES)
    profile: dict[str, Any] = dict(resolved.profile)
    if provider in ("openai", "openai-chat", "openai-responses"):
        # What `OpenAIProvider.model_profile` adds: only OpenAI's audio models take audio input.
        profile["supports_audio_file_input"] = "audio" in name
    issues: list[CompatIssue] = []
    for param, kind in params:
        if kind in refused_by_class:
            why = f"pydantic-ai's model class for `{provider}:` cannot send {_PLURAL[kind]} in a prompt"
        elif (refused := media_refusal(profile, kind)) is not None:
            why = f"pydantic-ai's profile for it says it cannot take {refused}"
        else:
            continue
        issues.append(
            CompatIssue(
                code="P307",
                message=f"Parameter {param!r} is typed `{kind}`, but model {model!r} cannot take {_PLURAL[kind]}: "
                f"{why}. The call would fail before any request; use a model that reads {_PLURAL[kind]}.",
                owner=None,
                field=param,
            )
        )
    return issues


# ---------------------------------------------------------------------------------------------------------------
# Analysis


def analyse(schema: JsonSchema, model: str, mode: str) -> list[CompatIssue]:
    """Compatibility issues of output `schema` sent in output `mode` (tool|native|prompted) to `model`.

    `schema` is not modified (pydantic-ai's transformers walk a copy).
    """
    if profile_for(model) is None:
        return []
    return _analyse(schema, model, mode)


def _analyse(schema: JsonSchema, model: str, mode: str) -> list[CompatIssue]:
    resolved = profile_for(model)
    assert resolved is not None
    profile = resolved.profile
    title = schema.get("title")
    issues: list[CompatIssue] = []
    # The same gates as pydantic-ai's `Model.prepare_request`.
    unsupported = {
        "native": not profile.get("supports_json_schema_output", False),
        "tool": not profile.get("supports_tools", True),
        "prompted": not profile.get("supports_text_output", True),
    }
    if unsupported.get(mode, False) and resolved.exact:
        what = {"native": "native structured output", "tool": "tool output", "prompted": "text output"}[mode]
        issues.append(
            CompatIssue(
                code="P301",
                message=f"{model!r} does not support {what} (`mode: {mode}`), according to pydantic-ai's profile "
                "for it; pydantic-ai would raise at the first call. Use another `mode` or model.",
                owner=title,
                field=None,
            )
        )
        return issues
    transformer = profile.get("json_schema_transformer")
    if transformer is None or mode == "prompted":
        # Prompted output puts the schema in the instructions: nothing is enforced, nothing is dropped.
        return issues
    if mode == "native":
        transformer = getattr(transformer, "output_object_transformer", transformer)
    from pydantic_ai.exceptions import UserError

    try:
        walker = transformer(schema, strict=None)
        sent = walker.walk()
    except UserError as exc:
        issues.append(
            CompatIssue(
                code="P302",
                message=f"pydantic-ai cannot send this schema to {model!r}: {exc}",
                owner=title,
                field=None,
            )
        )
        return issues
    issues.extend(_dropped(schema, sent, model))
    # An OpenAI-family key (hosts such as Ollama turn strict tool definitions off); others leave it out.
    strict_capable = profile.get("openai_supports_strict_tool_definition", True) is not False
    if not walker.is_strict_compatible and strict_capable:
        issues.extend(_not_strict(schema, sent, transformer, model))
    return issues


def _not_strict(schema: JsonSchema, sent: JsonSchema, transformer: Any, model: str) -> list[CompatIssue]:
    from pydantic_ai.exceptions import UserError

    reasons: list[tuple[str | None, str | None, str]] = []
    try:
        strict = transformer(schema, strict=True).walk()
    except UserError as exc:
        reasons.append((schema.get("title"), None, str(exc)))
    else:
        for owner, field, before, after in _pairs(sent, strict, schema.get("title")):
            if field is None:
                missing = [p for p in after.get("required", []) if p not in before.get("required", [])]
                reasons.extend((owner, p, f"{p!r} is not required") for p in missing)
                continue
            if isinstance(before.get("additionalProperties"), dict) and not isinstance(
                after.get("additionalProperties"), dict
            ):
                reasons.append((owner, field, f"{field!r} is a dict (`additionalProperties`)"))
            reasons.extend(
                (owner, field, f"{field!r} has `{key}`")
                for key in before
                if key not in after and key not in _ANNOTATIONS and key not in _STRUCTURE
            )
    if not reasons:
        reasons.append((schema.get("title"), None, "the schema is over the provider's strict-mode limits"))
    owner, field, _ = reasons[0]
    listed = "; ".join(reason for _, _, reason in reasons[:6]) + ("; ..." if len(reasons) > 6 else "")
    return [
        CompatIssue(
            code="P303",
            message=f"Output schema {schema.get('title')!r} is not strict-compatible for {model!r}, so pydantic-ai "
            f"sends it without strict mode and the provider does not enforce it ({listed}). Make every field "
            "required without a default and drop those keywords, or accept that a malformed answer costs a retry.",
            owner=owner,
            field=field,
        )
    ]


def _dropped(schema: JsonSchema, sent: JsonSchema, model: str) -> Iterator[CompatIssue]:
    for owner, field, before, after in _pairs(schema, sent, schema.get("title")):
        where = f"field {field!r} of {owner!r}" if field else repr(owner)
        additional = before.get("additionalProperties")
        if isinstance(additional, dict) and not isinstance(after.get("additionalProperties"), dict):
            yield CompatIssue(
                code="P306",
                message=f"For {model!r}, pydantic-ai's schema transform removes the value schema of dict {where} "
                "(`additionalProperties`), so the provider only allows `{}` and the field comes back empty. "
                "Use a list of key/value objects instead.",
                owner=owner,
                field=field,
            )
        new_values = [v for k, v in after.items() if k not in before]
        description = str(after.get("description") or "")
        old_description = str(before.get("description") or "")
        for key, value in before.items():
            if key in after or key in _ANNOTATIONS or key in _STRUCTURE or key == "additionalProperties":
                continue
            if value in new_values or [value] in new_values:
                continue  # rewritten, not dropped (`const` -> `enum: [const]`, `oneOf` -> `anyOf`)
            shown = json.dumps(value)
            if str(value) in description and str(value) not in old_description:
                yield CompatIssue(
                    code="P305",
                    message=f"For {model!r}, pydantic-ai moves `{key}: {shown}` of {where} into its description: "
                    "the provider does not enforce it, the model only reads it (validation still checks it).",
                    owner=owner,
                    field=field,
                )
            else:
                yield CompatIssue(
                    code="P304",
                    message=f"For {model!r}, pydantic-ai drops `{key}: {shown}` from {where}: the provider never sees "
                    "it (validation still checks it, so answers breaking it cost a retry).",
                    owner=owner,
                    field=field,
                )


def _pairs(
    before: Any, after: Any, owner: str | None, field: str | None = None, root: Any = None
) -> Iterator[tuple[str | None, str | None, JsonSchema, JsonSchema]]:
    """Walk two versions of a schema side by side, yielding matching object nodes with their owner and field."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return
    root = before if root is None else root
    ref = before.get("$ref")
    if isinstance(ref, str) and "$ref" not in after and "anyOf" not in after:
        # Inlined by the transformer: compare against the definition it came from.
        target = _resolve(root, ref)
        if target is not None:
            merged = {**target, **{k: v for k, v in before.items() if k != "$ref"}}
            yield from _pairs(merged, after, target.get("title", owner), field, root)
        return
    yield owner, field, before, after
    title = before.get("title", owner) if "properties" in before else owner
    for name, sub in (before.get("properties") or {}).items():
        yield from _pairs(sub, (after.get("properties") or {}).get(name), title, name, root)
    yield from _pairs(before.get("items"), after.get("items"), owner, field, root)
    additional = before.get("additionalProperties")
    if isinstance(additional, dict):
        yield from _pairs(additional, after.get("additionalProperties"), owner, field, root)
    for kind in ("anyOf", "oneOf", "allOf"):
        members, others = before.get(kind) or [], after.get(kind) or after.get("anyOf") or []
        if len(members) == len(others):
            for member, other in zip(members, others, strict=True):
                yield from _pairs(member, other, owner, field, root)
    for defs in ("$defs", "definitions"):
        for name, sub in (before.get(defs) or {}).items():
            other = (after.get(defs) or {}).get(name)
            if other is not None:
                yield from _pairs(sub, other, sub.get("title", name) if isinstance(sub, dict) else name, None, root)


def _resolve(root: JsonSchema, ref: str) -> JsonSchema | None:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for token in ref[2:].split("/"):
        node = node.get(token.replace("~1", "/").replace("~0", "~")) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


_WAIT = 300.0  # seconds to wait for the helper's last answers before analysing the rest here
_MEDIA = "media"  # the mode of a request about media parameters (its schema is None)
# One request as the helper reads it: (schema, model, mode, media parameters as [param, kind] pairs).
_Request: TypeAlias = tuple[JsonSchema | None, str, str, list[list[str]] | None]


def _answer(request: _Request) -> list[CompatIssue]:
    schema, model, mode, params = request
    if mode == _MEDIA:
        return media_issues(model, [(param, kind) for param, kind in params or []])
    assert schema is not None
    return analyse(schema, model, mode)


class Analyses(Protocol):
    """Where `CheckRun.lint` sends each (schema, model, mode) to analyse; it reads every answer at the end."""

    def start(self) -> None:
        """Get ready: a check is about to run (the helper process starts importing pydantic-ai)."""

    def submit(self, schema: JsonSchema, model: str, mode: str) -> int:
        """Ask for the issues of `schema` in `mode` for `model`; the index of the answer in `results()`."""

    def submit_media(self, model: str, params: list[tuple[str, str]]) -> int:
        """Ask for the issues of media parameters `(param, kind)` for `model` (P307); the index of the answer."""

    def results(self) -> list[list[CompatIssue]]:
        """The issues of every request, in the order they were submitted."""

    def close(self) -> None:
        """Release what `start` took, once every answer is in."""


class InlineAnalyses:
    """Each analysis made at once, in this process."""

    def __init__(self) -> None:
        self._done: list[list[CompatIssue]] = []

    def start(self) -> None:
        pass

    def submit(self, schema: JsonSchema, model: str, mode: str) -> int:
        self._done.append(analyse(schema, model, mode))
        return len(self._done) - 1

    def submit_media(self, model: str, params: list[tuple[str, str]]) -> int:
        self._done.append(media_issues(model, params))
        return len(self._done) - 1

    def results(self) -> list[list[CompatIssue]]:
        return self._done

    def close(self) -> None:
        pass


class ProcessAnalyses:
    """Analyses made by a helper process, started at the first need; anything it does not answer is made here."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._started = False
        self._requests: list[_Request] = []
        self._answers: dict[int, list[CompatIssue]] = {}
        self._providers: frozenset[str] | None = None
        self._providers_known = threading.Event()
        self._outgoing: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    # -- the parent's side ------------------------------------------------------------------------------

    def providers(self) -> frozenset[str] | None:
        """The provider prefixes, as the helper's pydantic-ai knows them (None: it cannot say)."""
        self.start()
        self._providers_known.wait(_WAIT)
        return self._providers

    def submit(self, schema: JsonSchema, model: str, mode: str) -> int:
        return self._send_request((schema, model, mode, None))

    def submit_media(self, model: str, params: list[tuple[str, str]]) -> int:
        return self._send_request((None, model, _MEDIA, [list(pair) for pair in params]))

    def _send_request(self, request: _Request) -> int:
        self.start()
        index = len(self._requests)
        self._requests.append(request)
        if self._process is not None:
            try:  # only what JSON carries exactly (a tuple, a non-string key, a NaN: analysed here)
                line = json.dumps([index, *request])
                faithful = json.loads(line)[1:] == list(request)
            except (TypeError, ValueError):
                faithful = False
            if faithful:
                self._outgoing.put(line.encode() + b"\n")
        return index

    def results(self) -> list[list[CompatIssue]]:
        if self._requests:
            self.close()
        else:
            self.stop()  # nothing asked (`--select E`): no reason to wait for its import
        answers = self._answers
        return [answers[i] if i in answers else _answer(request) for i, request in enumerate(self._requests)]

    def stop(self) -> None:
        """End the helper now, whatever it was doing (after an error, or when no check needed it)."""
        process, self._process = self._process, None
        if process is None:
            return
        self._outgoing.put(None)
        process.kill()
        process.wait()

    def close(self) -> None:
        """Let the helper finish what it was sent, and wait for it (killing it after `_WAIT` seconds)."""
        process, self._process = self._process, None
        if process is None:
            return
        self._outgoing.put(None)
        for thread in self._threads:
            thread.join(_WAIT)
        if process.poll() is None:
            try:
                process.wait(_WAIT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def start(self) -> None:
        """Start the helper (once); without one, everything is analysed here."""
        if self._started:
            return
        self._started = True
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "atomtask.lint._compat"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "PYDANTIC_AI_NO_BANNER": "1"},
            )
        except OSError:  # no helper: everything is analysed here
            self._providers_known.set()
            return
        self._process = process
        assert process.stdin is not None and process.stdout is not None
        self._threads = [
            threading.Thread(target=self._send, args=(process.stdin,), daemon=True),
            threading.Thread(target=self._receive, args=(process.stdout,), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _send(self, stdin: IO[bytes]) -> None:
        try:
            while (line := self._outgoing.get()) is not None:
                stdin.write(line)
                stdin.flush()
        except OSError:  # the helper is gone: what it did not answer is analysed here
            pass
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def _receive(self, stdout: IO[bytes]) -> None:
        try:
            first = json.loads(stdout.readline() or b"null")
            if isinstance(first, dict) and isinstance(first.get("providers"), list):
                self._providers = frozenset(first["providers"])
            self._providers_known.set()
            for line in stdout:
                index, issues = json.loads(line)
                self._answers[index] = [
                    CompatIssue(code=code, message=message, owner=owner, field=field)
                    for code, message, owner, field in issues
                ]
        except (OSError, ValueError):  # a broken answer: the rest is analysed here
            pass
        finally:
            self._providers_known.set()


# -- the helper's side ----------------------------------------------------------------------------------


def main(stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> int:
    """Import pydantic-ai, send the known providers, then answer each request line until the input ends."""
    from atomtask.loading._providers import known_providers

    source = stdin or sys.stdin.buffer
    out = stdout or sys.stdout.buffer

    def write(value: Any) -> None:
        out.write(json.dumps(value).encode() + b"\n")
        out.flush()

    write({"providers": sorted(known_providers())})
    for line in source:
        index, schema, model, mode, *params = json.loads(line)
        issues = _answer((schema, model, mode, params[0] if params else None))
        write([index, [[i.code, i.message, i.owner, i.field] for i in issues]])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
