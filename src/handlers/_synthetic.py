"""`atomtask:synthetic`, the embedded offline model: answers that satisfy the declared schema, without an LLM.

It is the default when no model is configured. For a structured output it reads the JSON Schema
pydantic-ai sends (the output tool's parameters in tool mode, the output object in native and
prompted modes) and answers with an instance of it: valid by construction (formats, patterns,
bounds, enums, nested and recursive schemas, combinators) and plausible where it can be (names,
e-mails, dates, sentences). A text output gets two short sentences. The answer depends only on the
schema and the conversation's text (never on timestamps or ids), so the same inputs give the same
answer; a retry, whose feedback changes the conversation, gets a different one.

```python
system = TaskSystem(model="atomtask:synthetic")   # what an unconfigured TaskSystem uses
event = system.execute("extract_event", {"message": "Team sync tomorrow"}).unwrap()
```

`synthetic_instance(schema, seed)`:

1. `prepare` rewrites the schema for generation: local `$ref`s inlined (a recursive one at most
   `_DEPTH` times inside itself; deeper it becomes `false`, so an optional child stays out and a
   list of children ends), 2020-12 keywords (`prefixItems`, `dependentRequired`,
   `dependentSchemas`) written the draft-7 way the generator reads. A JSON Schema template's model
   view describes a recursive `$ref` in words ("Recursive: the same structure as ..."), which would
   accept anything while the template's validator follows the `$ref`: such a note becomes `false`,
   for generating and for judging alike, so no answer puts a made-up value where it stands.
2. `_plausible` proposes a whole instance (names, e-mails, dates, sentences, numbers in range); if
   the schema accepts it, that is the answer.
3. Otherwise hypothesis-jsonschema supplies the simplest instance that the schema accepts (it
   understands `allOf`/`anyOf`/`oneOf`/`not`, `if/then/else`, `pattern` through Hypothesis's regex
   strategy, formats, bounds), and the proposal is laid over it one leaf at a time, each leaf kept
   only if the whole instance still validates.

Validity is always judged by `jsonschema` on the schema as given (recursion notes closed), with
atomtask's dialects (every format asserted, ECMA-like patterns). Hypothesis is imported only when
step 3 runs; it keeps no example database, prints nothing, and writes nothing to disk (its storage
folder points at a path that cannot be created while it runs). The same schema and seed give the
same instance.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import json
import os
import re
import threading
import urllib.parse
import warnings
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from random import Random
from typing import Any, Final

import attrs
import jsonschema.validators
from atomtask.handlers._plausible import FORMATS, MISSING, format_value, plausible_text, propose
from atomtask.schemas.json_schema._dialects import validator_class
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    TextContent,
    TextPart,
    ToolCallPart,
    UserContent,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

__all__ = [
    "SYNTHETIC_SYSTEM",
    "CountingTestModel",
    "SyntheticModel",
    "embedded_model",
    "prepare",
    "request_usage",
    "synthetic_instance",
    "synthetic_model",
    "synthetic_profile",
]

_DEPTH: Final = 2  # how many times a `$ref` may open inside itself
_MAX_NODES: Final = 20_000  # past this, recursion is cut shallower so the inlined schema stays small
_TRIES: Final = 60  # examples Hypothesis may draw before giving up (the first, simplest one usually does)
_NOWHERE: Final = os.path.join(os.devnull, "atomtask-no-hypothesis-storage")
_LOCK = threading.Lock()

_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_VALUES = frozenset(
    {"items", "additionalItems", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"}
)
_DROPPED = frozenset(
    {"$defs", "definitions", "$schema", "$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$comment",
     "$recursiveAnchor", "$recursiveRef", "unevaluatedItems", "minContains", "maxContains", "discriminator"}
)  # fmt: skip

_DEFINITIONS = frozenset({"$defs", "definitions"})
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"})


class _TooBig(Exception):
    pass


def _resolve(root: Any, ref: str) -> Any:
    """The subschema a local `#/json/pointer` names, or None."""
    if not ref.startswith("#"):
        return None
    pointer = urllib.parse.unquote(ref[1:])
    if pointer and not pointer.startswith("/"):  # an `$anchor`: not followed
        return None
    node = root
    for token in pointer.split("/")[1:] if pointer else []:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def prepare(schema: Any, depth: int = _DEPTH) -> Any:
    """`schema` self-contained and in the draft-7 vocabulary the generator reads (see the module docstring)."""
    count = 0

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        nonlocal count
        count += 1
        if count > _MAX_NODES:
            raise _TooBig
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            if stack.count(ref) >= depth:
                return False
            target = _resolve(schema, ref)
            inlined = True if target is None else walk(target, (*stack, ref))
            rest = walk({k: v for k, v in node.items() if k != "$ref" and k not in _ANNOTATIONS}, stack)
            return inlined if rest == {} else {"allOf": [inlined, rest]}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED:
                continue
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                out[key] = {name: walk(sub, stack) for name, sub in value.items()}
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [walk(sub, stack) for sub in value]
            elif key in _SCHEMA_VALUES:
                out[key] = [walk(sub, stack) for sub in value] if isinstance(value, list) else walk(value, stack)
            else:
                out[key] = value
        return _draft7(out)

    try:
        return walk(schema, ())
    except _TooBig:
        if depth > 0:
            return prepare(schema, depth - 1)
        raise


def _draft7(node: dict[str, Any]) -> dict[str, Any]:
    if "prefixItems" in node:
        rest = node.pop("items", None)
        node["items"] = node.pop("prefixItems")
        if rest is not None:
            node["additionalItems"] = rest
    dependencies: dict[str, Any] = {}
    for keyword in ("dependentRequired", "dependentSchemas"):
        if isinstance(node.get(keyword), dict):
            dependencies.update(node.pop(keyword))
    if dependencies:
        node["dependencies"] = {**node.get("dependencies", {}), **dependencies}
    unevaluated = node.pop("unevaluatedProperties", None)
    combined = any(k in node for k in ("allOf", "anyOf", "oneOf", "if", "patternProperties", "additionalProperties"))
    if unevaluated is False and not combined:  # the same thing when nothing else evaluates properties
        node["additionalProperties"] = False
    return node


# What a model is sent where a JSON Schema template's recursive `$ref` was (`schemas.json_schema._views`,
# `ModelView.inline`): the structure described in words, since the model view inlines every `$ref`.
_RECURSION_NOTE: Final = re.compile(r"Recursive: the same structure as .+\.", re.DOTALL)


def _closed(schema: Any) -> Any:
    """`schema` with each recursion note of a template's model view made `false` (nothing fits there).

    The note accepts anything, but the template's own validator follows the `$ref` it stands for and
    holds the answer to the declared structure, which the note does not carry. An instance valid here
    never goes where the note is (an optional child stays out, a list of children is empty, a `oneOf`
    or `anyOf` takes another branch), so it is valid against the declared schema too.
    """

    def walk(node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        if set(node) == {"description"} and isinstance(node["description"], str):
            return False if _RECURSION_NOTE.fullmatch(node["description"]) else node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _SCHEMA_MAPS | _DEFINITIONS and isinstance(value, dict):
                out[key] = {name: walk(sub) for name, sub in value.items()}
            elif key in _SCHEMA_LISTS | _SCHEMA_VALUES and isinstance(value, list):
                out[key] = [walk(sub) for sub in value]
            elif key in _SCHEMA_VALUES:
                out[key] = walk(value)
            else:
                out[key] = value
        return out

    return walk(schema)


@attrs.frozen(kw_only=True)
class _Plan:
    """What one schema needs for every answer: its generator form and its validator."""

    key: str
    prepared: Any
    is_valid: Callable[[Any], bool]

    def acceptable(self, instance: Any) -> bool:
        try:
            json.dumps(instance, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError, UnicodeEncodeError):
            return False
        return self.is_valid(instance)


_PLANS: dict[str, _Plan] = {}


def _plan(schema: Any) -> _Plan:
    key = json.dumps(schema, sort_keys=True)
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) > 256:
            _PLANS.clear()
        plan = _PLANS[key] = _new_plan(key, copy.deepcopy(schema))
    return plan


def _new_plan(key: str, schema: Any) -> _Plan:
    schema = _closed(schema)
    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls = validator_class(base, None)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)

    def is_valid(instance: Any) -> bool:
        try:
            return bool(validator.is_valid(instance))
        except Exception:  # an unresolvable `$ref` and the like: nothing validates
            return False

    return _Plan(key=key, prepared=prepare(schema), is_valid=is_valid)


def synthetic_instance(schema: Any, seed: int) -> Any:
    """An instance `schema` accepts, plausible where it can be; the same for the same `schema` and `seed`.

    Returns the best attempt (possibly invalid) when no valid instance is found, e.g. for a schema
    nothing satisfies; the caller's validation then reports why.
    """
    plan = _plan(schema)
    proposal = propose(plan.prepared, (), Random(seed))
    if proposal is not MISSING and plan.acceptable(proposal):
        return proposal
    skeleton = _simplest(plan, seed)
    if skeleton is MISSING:
        return proposal if proposal is not MISSING else {}
    return _overlay(skeleton, proposal, plan.acceptable)


def _overlay(skeleton: Any, proposal: Any, acceptable: Callable[[Any], bool]) -> Any:
    """`proposal` laid over the valid `skeleton` leaf by leaf, keeping each change that leaves it valid."""
    holder = [copy.deepcopy(skeleton)]

    def merge(container: Any, key: Any, offered: Any) -> None:
        current = container[key]
        if offered is MISSING or current == offered:
            return
        if isinstance(current, dict) and isinstance(offered, dict):
            for name, value in offered.items():
                if name in current:
                    merge(current, name, value)
                else:
                    current[name] = value
                    if not acceptable(holder[0]):
                        del current[name]
            # The schema's property order, as a person (and the plausible proposal) would write it.
            container[key] = {**{n: current[n] for n in offered if n in current}, **current}
            return
        if isinstance(current, list) and isinstance(offered, list):
            for index in range(min(len(current), len(offered))):
                merge(current, index, offered[index])
            for value in offered[len(current) :]:
                current.append(value)
                if not acceptable(holder[0]):
                    current.pop()
                    break
            return
        container[key] = offered
        if not acceptable(holder[0]):
            container[key] = current

    merge(holder, 0, proposal)
    return holder[0]


def _simplest(plan: _Plan, seed: int) -> Any:
    """Hypothesis's simplest valid instance of the plan's schema (further draws seeded), or `MISSING`."""
    found: list[Any] = [MISSING]

    def run() -> None:
        from hypothesis import HealthCheck, Phase, Verbosity, find, settings

        with _LOCK, _hypothesis_quietly():
            quiet = settings(
                database=None,
                max_examples=_TRIES,
                phases=[Phase.generate],
                deadline=None,
                suppress_health_check=list(HealthCheck),
                verbosity=Verbosity.quiet,
            )
            with contextlib.suppress(Exception):  # no example, or a schema the generator cannot read
                found[0] = find(_strategy(plan), plan.acceptable, settings=quiet, random=Random(seed))

    from hypothesis import currently_in_test_context

    if currently_in_test_context():
        # Inside a user's own `@given` test, Hypothesis refuses a nested search in the same thread.
        worker = threading.Thread(target=run, name="atomtask-synthetic")
        worker.start()
        worker.join()
    else:
        run()
    return found[0]


@contextlib.contextmanager
def _hypothesis_quietly() -> Iterator[None]:
    """No `.hypothesis/` folder (its caches go to a path that cannot be created) and no warnings, then restore."""
    from hypothesis.configuration import set_hypothesis_home_dir, storage_directory

    previous = storage_directory(intent_to_write=False).home_directory
    set_hypothesis_home_dir(_NOWHERE)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        set_hypothesis_home_dir(previous)


_STRATEGIES: dict[str, Any] = {}


def _strategy(plan: _Plan) -> Any:
    strategy = _STRATEGIES.get(plan.key)
    if strategy is None:
        from hypothesis_jsonschema import from_schema

        # `codec=None` and our own format strategies: Hypothesis's would build Unicode tables (seconds,
        # and cached on disk, which we do not allow); the acceptance check rejects unencodable strings.
        strategy = from_schema(plan.prepared, custom_formats=_formats(), allow_x00=False, codec=None)
        if len(_STRATEGIES) > 256:
            _STRATEGIES.clear()
        _STRATEGIES[plan.key] = strategy
    return strategy


@functools.cache
def _formats() -> dict[str, Any]:
    from hypothesis import strategies as st

    # hypothesis-jsonschema re-checks these with `jsonschema.FormatChecker()`, whose `time` is draft 3's (no
    # offset allowed): a format none of our values pass there keeps the generator's own strategy.
    checker = jsonschema.FormatChecker()
    values = {fmt: dict.fromkeys(str(format_value(fmt, Random(i))) for i in range(8)) for fmt in FORMATS}
    kept = {fmt: [v for v in choices if checker.conforms(v, fmt)] for fmt, choices in values.items()}
    return {fmt: st.sampled_from(choices) for fmt, choices in kept.items() if choices}


SYNTHETIC_SYSTEM: Final = "atomtask"


def synthetic_profile() -> ModelProfile:
    """What the synthetic model supports: tool, native (JSON Schema) and prompted output, and text."""
    return ModelProfile(supports_json_schema_output=True, supports_json_object_output=True)


class SyntheticModel(FunctionModel):
    """A pydantic-ai model that answers every request with a schema-valid, plausible, deterministic value.

    Function tools are never called: the answer is the final output at once. Labelled `atomtask:synthetic`.
    """

    def __init__(self, *, settings: ModelSettings | None = None) -> None:
        super().__init__(
            self._respond,
            stream_function=self._stream,
            model_name="synthetic",
            profile=synthetic_profile(),
            settings=settings,
        )

    @property
    def system(self) -> str:
        return SYNTHETIC_SYSTEM

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        parts: list[ModelResponsePart] = [answer(messages, info)]
        return ModelResponse(parts=parts, usage=request_usage(messages, parts))

    async def _stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        part = answer(messages, info)
        if isinstance(part, ToolCallPart):
            yield {
                0: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(), tool_call_id=part.tool_call_id)
            }
        else:
            yield part.content


def synthetic_model(name: str) -> SyntheticModel:
    """The embedded model `atomtask:<name>` (only `synthetic` exists; model strings are checked before this)."""
    if name != "synthetic":
        raise ValueError(f"No embedded model {name!r}; the only one is 'synthetic'.")
    return SyntheticModel()


class CountingTestModel(TestModel):
    """pydantic-ai's `TestModel` (the model string `test`), its usage counted like the synthetic model's.

    `TestModel` estimates usage from the message parts alone: the instructions (a template's system
    text) and text without spaces count for next to nothing, so limits never tripped offline.
    """

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        response = await super().request(messages, model_settings, model_request_parameters)
        response.usage = request_usage(messages, response.parts)
        return response


def embedded_model(spec: str) -> FunctionModel | TestModel:
    """The model an embedded model string stands for: `test` or `atomtask:synthetic`."""
    if spec == "test":
        return CountingTestModel()
    return synthetic_model(spec.split(":", 1)[1])


# pydantic-ai's test models count about 50 tokens of overhead for every request, and a token for each
# word or punctuation mark; a long run of text without spaces is counted here at 4 characters a token,
# the usual rule of thumb, so a 60 MB blob is not "one word".
_REQUEST_OVERHEAD: Final = 50
_CHARS_PER_TOKEN: Final = 4


def request_usage(messages: Sequence[ModelMessage], answer: Sequence[ModelResponsePart]) -> RequestUsage:
    """The usage of one request to an embedded model, counted from what it received and answered.

    Input: the instructions in force and every part of the conversation (the prompt, tool returns,
    retry feedback, earlier answers), as a provider bills a request; output: the `answer`'s parts.
    """
    instructions = next((m.instructions for m in reversed(messages) if isinstance(m, ModelRequest)), None)
    sent = _REQUEST_OVERHEAD + (_tokens(instructions) if instructions else 0)
    for message in messages:
        sent += sum(_tokens(_part_content(part)) for part in message.parts)
    return RequestUsage(input_tokens=sent, output_tokens=sum(_tokens(_part_content(part)) for part in answer))


def _part_content(part: Any) -> str | Sequence[UserContent]:
    if isinstance(part, ToolCallPart):
        return part.args_as_json_str()
    for method in ("model_response_str", "model_response"):  # a tool's return, retry feedback
        render = getattr(part, method, None)
        if callable(render):
            return str(render())
    content = getattr(part, "content", None)
    return content if isinstance(content, str | list | tuple) else ""


# Where pydantic-ai's test models split text into "tokens": whitespace and `",.:`.
_TOKEN_SPLIT: Final = re.compile(r'[\s",.:]+')


def _tokens(content: str | Sequence[UserContent]) -> int:
    """Text: a token per word or punctuation run (as pydantic-ai's test models count), at least one per 4
    characters; a binary part: a token per byte (as they count it); other media: none."""
    if isinstance(content, str):
        words = len(_TOKEN_SPLIT.split(content.strip())) if content else 0
        return max(words, -(-len(content) // _CHARS_PER_TOKEN))
    total = 0
    for item in content:
        if isinstance(item, str | TextContent):
            total += _tokens(item if isinstance(item, str) else item.content)
        elif isinstance(item, BinaryContent):
            total += len(item.data)
    return total


def answer(messages: Sequence[ModelMessage], info: AgentInfo) -> TextPart | ToolCallPart:
    """The synthetic answer to a request: a call of the output tool, JSON text, or plain text."""
    conversation = _digest(messages, info.instructions)
    if info.output_tools:
        tool = info.output_tools[0]
        value = synthetic_instance(tool.parameters_json_schema, _seed(tool.parameters_json_schema, conversation))
        return ToolCallPart(tool.name, args=value, tool_call_id=f"synthetic-{conversation[:16]}")
    output_object = info.model_request_parameters.output_object
    if output_object is not None:  # native or prompted output: the JSON as the text of the answer
        schema = output_object.json_schema
        return TextPart(json.dumps(synthetic_instance(schema, _seed(schema, conversation)), ensure_ascii=False))
    return TextPart(plausible_text(Random(_seed(None, conversation))))


def _seed(schema: Any, conversation: str) -> int:
    text = json.dumps(schema, sort_keys=True) + conversation
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _digest(messages: Sequence[ModelMessage], instructions: str | None) -> str:
    """A hash of what was said: each part's kind and content, without timestamps, ids or usage."""
    digest = hashlib.sha256((instructions or "").encode())
    for message in messages:
        digest.update(b"\x00request" if isinstance(message, ModelRequest) else b"\x00response")
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                content: Any = part.args_as_json_str()
            elif hasattr(part, "model_response"):  # retry feedback: the text the model would read
                content = part.model_response()
            else:
                content = getattr(part, "content", None)
            digest.update(f"\x00{part.part_kind}\x00".encode())
            digest.update(json.dumps(content, sort_keys=True, default=str).encode())
    return digest.hexdigest()
