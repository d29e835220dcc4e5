"""Reading template, schema and workflow files (YAML) into declarations that remember where they came from.

`yaml_documents` turns YAML text into Python data whose mappings know their file, line and column
(libyaml's composer with a direct builder; the pure-Python loader is the reference for errors and
unusual documents); pydantic's errors become located usage errors; a mapping with `steps` is a workflow;
a document of `templates`, `schemas`, `workflows` and `models` (model aliases) holds several.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import yaml
from atomtask.errors import (
    ConfigurationError,
    SchemaError,
    SourceLocation,
    TemplateError,
    UsageError,
    WorkflowDeclarationError,
    in_source_order,
)
from atomtask.loading._declarations import Declarations, PartialTemplate
from atomtask.loading._model_aliases import ModelAliasDef
from atomtask.schemas._declarations import FieldDef, JsonSchemaDef, PythonSchemaDef, SchemaDef
from atomtask.schemas._sources import MAX_NESTING, too_deep
from atomtask.system._templates import TOOL_TAGS, McpServerSpec, McpToolSpec, Template, TemplateLimits, TextOrigin
from atomtask.system._workflows import Migration, OnFailure, Route, Step, Workflow, WorkflowState, collect_origins
from pydantic import BaseModel, ValidationError
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

__all__ = [
    "ErrorFactory",
    "YamlLoader",
    "YamlNode",
    "load_yaml_text",
    "read_workflow",
    "validation_errors",
    "yaml_documents",
    "yaml_problem",
]

#: Makes the usage error of one mistake: `factory(message, location=...)` (an error class, or a partial of one).
ErrorFactory = Callable[..., UsageError]


@attrs.frozen(kw_only=True)
class YamlNode:
    """Where one mapping and each of its keys' values start.

    For a quoted scalar value (`"..."`, `'...'`), the key's location is the first character inside
    the quotes, so an offset into the value's text lands on the right column.
    """

    start: SourceLocation
    keys: dict[str, SourceLocation]
    block_keys: frozenset[str]


class _DeclarationProblems(Exception):
    """Every mistake found in one declaration (raised as the first one when errors are not collected).

    `partial` is the declaration read without the keys in error, when that much can be read (templates).
    """

    def __init__(self, problems: list[UsageError], partial: PartialTemplate | None = None) -> None:
        super().__init__(str(problems[0]))
        self.problems = problems
        self.partial = partial


def validation_errors(
    kind: ErrorFactory,
    what: str,
    doc: Mapping[str, Any],
    exc: ValidationError,
    nodes: Mapping[int, YamlNode],
    location: SourceLocation,
    keys: Iterable[str],
    keys_at: Callable[[Sequence[Any]], Iterable[str] | None] | None = None,
) -> list[UsageError]:
    """Turn pydantic's errors into messages pointing at the offending keys' lines, one per key.

    `keys` are the valid top-level keys (listed for an unknown one); `keys_at(path)` gives the valid
    keys of the nested mapping at `path` (`("steps", 2)`), when the declaration knows them.
    """
    name = doc.get("name")
    label = f"{what} {name!r}" if isinstance(name, str) else what
    out: dict[tuple[Any, ...], UsageError] = {}
    for err in exc.errors():
        loc_path = [
            p for p in err["loc"] if not isinstance(p, str) or not (p.startswith("function-") or p in TOOL_TAGS)
        ]
        where: SourceLocation | None = location
        container: Any = doc
        walked: list[Any] = []  # the part of the path that is in the document (not union members' tags)
        for part in loc_path:
            node = nodes.get(id(container)) if isinstance(container, dict) else None
            if node is not None and isinstance(part, str) and part in node.keys:
                where = node.keys[part]
            try:
                container = container[part]
            except (KeyError, IndexError, TypeError):
                break
            walked.append(part)
            if isinstance(part, int) and isinstance(container, dict):  # an item of a list: where it starts
                item = nodes.get(id(container))
                where = item.start if item is not None else where
        if tuple(walked) in out:
            continue  # one message per key: the alternatives of a union each report the same mistake
        dotted = ".".join(str(p) for p in loc_path)
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            valid = list(keys) if len(loc_path) == 1 else (keys_at(loc_path[:-1]) if keys_at is not None else None)
            if valid is not None:
                message = f"unknown key; valid keys: {', '.join(valid)}"
        elif err["type"] == "missing":
            message = "required key is missing"
        out[tuple(walked)] = kind(f"Invalid {label}: `{dotted}`: {message}.", location=where)
    return in_source_order(out.values())


try:  # libyaml's parser (as PyYAML's wheels ship it) reads ~10x faster than PyYAML's own.
    from yaml._yaml import CParser as _CComposer
    from yaml._yaml import CParser as _EventSource

    _LIBYAML = True
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _LIBYAML = False

    class _CComposer:  # type: ignore[no-redef]  # never used without libyaml
        def __init__(self, stream: str) -> None:
            raise NotImplementedError

    class _EventSource(Reader, Scanner, Parser):  # type: ignore[no-redef]  # the same events, pure Python
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)


class YamlLoader(SafeConstructor):
    """A safe loader noting, in `nodes`, where every mapping it constructs and each of its values start."""

    file: str
    nodes: dict[int, YamlNode]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        mapping = super().construct_mapping(node, deep=True)
        keys: dict[str, SourceLocation] = {}
        block: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            # Inside the quotes of a quoted scalar, so offsets into its text land on their column.
            quoted = isinstance(value_node, yaml.ScalarNode) and value_node.style in ('"', "'")
            keys[key] = self._loc(value_node.start_mark, shift=1 if quoted else 0)
            if isinstance(value_node, yaml.ScalarNode) and value_node.style in ("|", ">"):
                block.add(key)
        self.nodes[id(mapping)] = YamlNode(start=self._loc(node.start_mark), keys=keys, block_keys=frozenset(block))
        return mapping

    def _loc(self, mark: Any, *, shift: int = 0) -> SourceLocation:
        return SourceLocation(file=self.file, line=mark.line + 1, column=mark.column + 1 + shift)


_RESOLVED: dict[tuple[str, bool, bool], str] = {}  # (plain scalar, implicit flags) -> its tag
_RESOLVED_MAX = 50_000


class _Resolver(Resolver):
    """PyYAML's resolver, remembering the tag of short scalars (keys, types, names repeat across files).

    The tag of a scalar depends only on its text and the resolver's tables, which nothing changes:
    the regular expressions of `Resolver.resolve` run once per distinct scalar instead of for each.
    """

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is not yaml.ScalarNode or len(value) > 64:
            return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]  # untyped in typeshed
        key = (value, bool(implicit[0]), bool(implicit[1]))
        tag = _RESOLVED.get(key)
        if tag is None:
            tag = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
            if len(_RESOLVED) < _RESOLVED_MAX:
                _RESOLVED[key] = tag
        return tag


class _LocatingLoader(YamlLoader, Composer, _EventSource, _Resolver):
    """A safe loader composing in Python, refusing nesting deeper than `MAX_NESTING` as it is met.

    The reference reader: `load_yaml_text` uses it for any text the faster `_FastLoader` cannot
    read exactly as this one does (any YAML error, input libyaml might recurse too deep on), so
    errors and locations are always this loader's.
    """

    def __init__(self, stream: str, file: str) -> None:
        _EventSource.__init__(self, stream)
        SafeConstructor.__init__(self)
        _Resolver.__init__(self)
        Composer.__init__(self)
        self.file = file
        self.nodes: dict[int, YamlNode] = {}
        self._depth = 0
        self._heights: dict[int, int] = {}  # id(collection node) -> how many levels it nests

    def compose_document(self) -> yaml.Node | None:
        node = super().compose_document()
        self._heights.clear()  # keyed by id(): the next document's nodes may reuse these ids
        return node

    # Aliases add no nesting while composing, but what they point at nests inside them once constructed:
    # each collection's height counts the collections it holds, aliased ones included.
    def compose_sequence_node(self, anchor: Any) -> yaml.SequenceNode:
        self._enter()
        node = super().compose_sequence_node(anchor)
        self._leave(node, node.value)
        return node

    def compose_mapping_node(self, anchor: Any) -> yaml.MappingNode:
        self._enter()
        node = super().compose_mapping_node(anchor)
        self._leave(node, [child for pair in node.value for child in pair])
        return node

    def _enter(self) -> None:
        self._depth += 1
        if self._depth > MAX_NESTING:
            event = self.peek_event()
            raise too_deep(self._loc(event.start_mark) if event is not None else SourceLocation(file=self.file), "YAML")

    def _leave(self, node: yaml.Node, children: list[Any]) -> None:
        heights = self._heights
        height = 1 + max([heights.get(id(child), 0) for child in children], default=0)
        heights[id(node)] = height
        self._depth -= 1
        if self._depth + height > MAX_NESTING:
            raise too_deep(self._loc(node.start_mark), "YAML")


class _FastLoader(YamlLoader, _CComposer, _Resolver):
    """libyaml's composer (in C, ~4x faster), with `MAX_NESTING` checked on the composed nodes.

    Used only where it cannot recurse deep enough to hurt (see `_fast_loader`), and only when every
    document composes without an error: then its nodes, marks and styles are the reference loader's.
    """

    def __init__(self, stream: str, file: str) -> None:
        _CComposer.__init__(self, stream)
        SafeConstructor.__init__(self)
        _Resolver.__init__(self)
        self.file = file
        self.nodes: dict[int, YamlNode] = {}
        self.documents: list[yaml.Node] = []

    def construct(self, root: yaml.Node) -> Any:
        """`root`'s data, as `construct_document` makes it, by a direct walk where nothing needs its machinery.

        That walk takes plain documents (strings, numbers, booleans, nulls, lists and mappings, no
        alias, merge key or other tag) and refuses nesting deeper than `MAX_NESTING` at the node
        `_LocatingLoader` refuses; anything else goes through `check_nesting` and `construct_document`.
        """
        found: dict[int, YamlNode] = {}
        try:
            data = self._build(root, 1, set(), found)
        except _Unusual:
            self.check_nesting(root)
            return self.construct_document(root)
        self.nodes.update(found)
        return data

    def _build(self, node: yaml.Node, depth: int, seen: set[int], found: dict[int, YamlNode]) -> Any:
        tag = node.tag
        if isinstance(node, yaml.ScalarNode):
            if tag == _STR:
                return node.value
            if tag in _PLAIN:
                return self.yaml_constructors[tag](self, node)
            raise _Unusual
        if id(node) in seen:  # an alias: `construct_document` shares the object and handles recursion
            raise _Unusual
        seen.add(id(node))
        if depth > MAX_NESTING:
            raise too_deep(self._loc(node.start_mark), "YAML")
        if isinstance(node, yaml.SequenceNode) and tag == _SEQ:
            return [self._build(child, depth + 1, seen, found) for child in node.value]
        if not isinstance(node, yaml.MappingNode) or tag != _MAP:
            raise _Unusual
        mapping: dict[Any, Any] = {}
        keys: dict[str, SourceLocation] = {}
        block: set[str] = set()
        for key_node, value_node in node.value:
            if key_node.tag in _SPECIAL_KEYS:
                raise _Unusual
            key = self._build(key_node, depth + 1, seen, found)
            if isinstance(key, (list, dict)):  # unhashable: `construct_mapping` says so
                raise _Unusual
            mapping[key] = self._build(value_node, depth + 1, seen, found)
        for key_node, value_node in node.value:  # as `YamlLoader.construct_mapping` notes them
            name = str(key_node.value)
            quoted = isinstance(value_node, yaml.ScalarNode) and value_node.style in ('"', "'")
            keys[name] = self._loc(value_node.start_mark, shift=1 if quoted else 0)
            if isinstance(value_node, yaml.ScalarNode) and value_node.style in ("|", ">"):
                block.add(name)
        found[id(mapping)] = YamlNode(start=self._loc(node.start_mark), keys=keys, block_keys=frozenset(block))
        return mapping

    def check_nesting(self, root: yaml.Node) -> None:
        """Refuse `root` as `_LocatingLoader` does while composing: same nodes, same order, same location."""
        heights: dict[int, int] = {}  # id(collection node) -> how many levels it nests (0 while inside it)

        def height(node: yaml.Node, depth: int) -> int:
            if isinstance(node, yaml.SequenceNode):
                children = node.value
            elif isinstance(node, yaml.MappingNode):
                children = [child for pair in node.value for child in pair]
            else:
                return 0
            known = heights.get(id(node))
            if known is not None:  # an alias: adds its height, and no nesting of its own
                return known
            if depth > MAX_NESTING:
                raise too_deep(self._loc(node.start_mark), "YAML")
            heights[id(node)] = 0  # an alias to an enclosing collection adds nothing, as when composing
            found = 1 + max([height(child, depth + 1) for child in children], default=0)
            heights[id(node)] = found
            if depth - 1 + found > MAX_NESTING:
                raise too_deep(self._loc(node.start_mark), "YAML")
            return found

        height(root, 1)


for _loader in (_LocatingLoader, _FastLoader):
    _loader.add_constructor(  # type: ignore[type-var]  # typeshed bounds this to PyYAML's own loaders
        yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
        YamlLoader.construct_mapping,
    )


class _Unusual(Exception):
    """A document `_FastLoader._build` leaves to PyYAML's constructor."""


_STR, _SEQ, _MAP = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
_PLAIN = frozenset(f"tag:yaml.org,2002:{kind}" for kind in ("null", "bool", "int", "float"))
_SPECIAL_KEYS = frozenset(("tag:yaml.org,2002:merge", "tag:yaml.org,2002:value"))

#: Nesting libyaml's composer (which recurses in C) is known to survive, even on a small thread stack.
_C_SAFE_DEPTH = 1000


def _fast_loader(text: str, file: str) -> _FastLoader | None:
    """A `_FastLoader` with every document of `text` composed, or None when `_LocatingLoader` must read it.

    That is when PyYAML has no libyaml, when `text` has a YAML error (so the message is the
    reference loader's), and when libyaml might recurse too deep: it has no nesting limit of its own
    (older builds) and `text` could nest more than `_C_SAFE_DEPTH` levels (each collection starts
    with a `[`, `{`, `-`, `:` or `?` of its own, so their count bounds the nesting).
    """
    if not _LIBYAML:
        return None
    if not _libyaml_limits_nesting() and sum(text.count(c) for c in "[{-:?") > _C_SAFE_DEPTH:
        return None
    loader = _FastLoader(text, file)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                break
            loader.documents.append(node)
    except yaml.YAMLError:
        loader.dispose()
        return None
    return loader


@functools.cache
def _libyaml_limits_nesting() -> bool:
    """Whether this libyaml refuses nesting deeper than `_C_SAFE_DEPTH` itself (0.2.5 and later do, at 1,000)."""
    deep = "[" * (_C_SAFE_DEPTH + 1) + "]" * (_C_SAFE_DEPTH + 1)
    try:
        yaml.compose(deep, Loader=yaml.CSafeLoader)
    except yaml.YAMLError as exc:
        return "nesting depth" in str(exc)
    return False


def yaml_documents(text: str, file: str) -> Iterator[tuple[Any, YamlLoader]]:
    """Each document of `text` as data, with the loader whose `nodes` say where its mappings are (by `id()`).

    Raises `yaml.YAMLError` for invalid YAML and `too_deep`'s error for nesting over `MAX_NESTING`.
    """
    fast = _fast_loader(text, file)
    if fast is not None:
        try:
            for node in fast.documents:
                yield fast.construct(node), fast
        finally:
            fast.dispose()
        return
    loader = _LocatingLoader(text, file)
    try:
        # `compose_document` + `construct_document` is what `get_data` does; typeshed types these.
        while loader.check_node():
            document = loader.get_node()
            if document is None:
                break
            yield loader.construct_document(document), loader
    finally:
        loader.dispose()


def read_workflow(doc: dict[str, Any], nodes: Mapping[int, YamlNode], location: SourceLocation) -> Workflow:
    """The `Workflow` of `doc`, located; raises `_DeclarationProblems` with every shape mistake (E110)."""
    try:
        workflow = Workflow.model_validate(doc)
    except ValidationError as exc:
        name = doc.get("name")
        kind = functools.partial(WorkflowDeclarationError, workflow=name if isinstance(name, str) else None)
        problems = validation_errors(
            kind, "workflow", doc, exc, nodes, location, keys=_keys(Workflow), keys_at=_keys_at
        )
        raise _DeclarationProblems(problems) from None

    def node_of(mapping: Mapping[str, Any]) -> tuple[SourceLocation, Mapping[str, SourceLocation]] | None:
        node = nodes.get(id(mapping))
        return (node.start, node.keys) if node is not None else None

    return workflow.located(location, collect_origins(doc, node_of))


def _keys(model: type[BaseModel]) -> list[str]:
    """The keys a declaration class accepts, as written in a file (aliases: `set`, `as`, `schema`)."""
    return [info.alias or name for name, info in model.model_fields.items()]


def _keys_at(path: Sequence[Any]) -> Iterable[str] | None:
    """The valid keys of the mapping at `path` in a workflow document, when it is one of the declaration's parts."""
    head = [p for p in path if not isinstance(p, int)]
    if head and head[0] == "steps":
        inner = head[1:]
        if inner[:1] == ["parallel"]:
            inner = inner[1:]
        if not inner:
            return _keys(Step)
        part: dict[str, type[BaseModel]] = {"route": Route, "on_failure": OnFailure, "limits": TemplateLimits}
        return _keys(part[inner[0]]) if len(inner) == 1 and inner[0] in part else None
    if head == ["state"]:
        return _keys(WorkflowState)
    if head == ["limits"]:
        return _keys(TemplateLimits)
    if head == ["migrations"]:
        return _keys(Migration)
    return None


def load_yaml_text(text: str, file: str = "<string>", *, errors: list[UsageError] | None = None) -> Declarations:
    """Parse YAML source into templates, schemas and workflows, each carrying its location.

    With `errors`, an invalid template, schema or workflow is appended there and reading goes on with the next
    one (so `atomtask check` reports every mistake); without it, the first one raises.
    """
    out = Declarations()
    try:
        for doc, loader in yaml_documents(text, file):
            out.extend(_declarations(doc, loader, file, errors))
    except yaml.YAMLError as exc:
        problem, location = yaml_problem(exc, text, file)
        if "nesting depth" in problem and location.line is not None:  # libyaml's own limit, met before ours
            raise too_deep(location, "YAML") from None
        raise TemplateError(f"Invalid YAML: {problem}.", location=location) from None
    return out


def yaml_problem(exc: yaml.YAMLError, text: str, file: str) -> tuple[str, SourceLocation]:
    """What a PyYAML error says is wrong, and where in `text` (the file `file`), for every kind of `YAMLError`.

    A character YAML refuses (a NUL, another control character: PyYAML's `ReaderError`, raised before any
    parsing) is named with its code point and located by its offset, with the fix; a syntax error at its mark.
    """
    if isinstance(exc, yaml.reader.ReaderError):
        char = exc.character
        code = char if isinstance(char, int) else ord(char) if isinstance(char, str) and len(char) == 1 else None
        offset = exc.position if isinstance(exc.position, int) and 0 <= exc.position <= len(text) else 0
        if code is not None and (offset >= len(text) or ord(text[offset]) != code):
            # libyaml counts bytes of the UTF-8 text, the pure-Python reader characters
            offset = len(text.encode("utf-8", "surrogatepass")[: exc.position].decode("utf-8", "ignore"))
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        what = "a NUL character (U+0000)" if code == 0 else f"character U+{code:04X}" if code is not None else "a byte"
        problem = (
            f"{what}, which YAML does not allow in a file; delete it (a value that needs it is written as an "
            "escape, `\\x..`, inside a double-quoted string)"
        )
        return problem, SourceLocation(file=file, line=line, column=column)
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    location = (
        SourceLocation(file=file, line=mark.line + 1, column=mark.column + 1) if mark else SourceLocation(file=file)
    )
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    return problem, location


def _declarations(doc: Any, loader: YamlLoader, file: str, errors: list[UsageError] | None = None) -> Declarations:
    out = Declarations()
    if doc is None:
        return out
    if isinstance(doc, list):
        for item in doc:
            out.extend(_declarations(item, loader, file, errors))
        return out
    node = loader.nodes.get(id(doc)) if isinstance(doc, dict) else None
    location = node.start if node is not None else SourceLocation(file=file)
    if not isinstance(doc, dict):
        error = TemplateError(
            f"Expected a template, schema or workflow mapping, got {type(doc).__name__}.", location=location
        )
        return _failed([error], errors)
    if set(doc) <= {"templates", "schemas", "workflows", "models"} and doc:
        if "models" in doc:  # model aliases: `models: {fast: "openai-chat:gpt-4o-mini"}`
            try:
                out.model_aliases.extend(_model_aliases(doc["models"], loader, _key_loc(node, "models", location)))
            except UsageError as exc:
                out.extend(_failed([exc], errors))
        for key in ("schemas", "templates", "workflows"):
            items = doc.get(key) or []
            if not isinstance(items, list):
                raise TemplateError(f"`{key}` must be a list.", location=_key_loc(node, key, location))
            for item in items:
                out.extend(_declarations(item, loader, file, errors))
        return out
    try:
        if "instructions" in doc:
            out.templates.append(_template(doc, loader, location))
        elif "steps" in doc:
            out.workflows.append(read_workflow(doc, loader.nodes, location))
        elif "fields" in doc:
            out.schemas.append(_schema(doc, loader, location))
        elif "json_schema" in doc:
            out.json_schemas.append(_located(JsonSchemaDef, doc, loader, location))
        elif "python" in doc:
            out.python_schemas.append(_located(PythonSchemaDef, doc, loader, location))
        else:
            raise TemplateError(
                "This mapping is neither a template (it has no `instructions`), a workflow (no `steps`) nor a "
                f"schema (no `fields`, `json_schema` or `python`); keys found: {', '.join(map(str, doc)) or 'none'}.",
                location=location,
            )
    except (UsageError, _DeclarationProblems) as exc:
        failed = _failed(exc.problems if isinstance(exc, _DeclarationProblems) else [exc], errors)
        if isinstance(exc, _DeclarationProblems) and exc.partial is not None:
            failed.partial_templates.append(exc.partial)  # checked on by `atomtask check`, never registered
        name = doc.get("name")
        if (
            not {"instructions", "steps"} & set(doc)
            and isinstance(name, str)
            and {"fields", "json_schema", "python"} & set(doc)
        ):
            failed.invalid_schemas[name] = location  # so a template using it is told it is invalid, not unknown
        return failed
    return out


def _model_aliases(value: Any, loader: YamlLoader, location: SourceLocation | None) -> list[ModelAliasDef]:
    """The `models:` mapping of a document: each alias with its target, located where the target is written."""
    node = loader.nodes.get(id(value)) if isinstance(value, dict) else None
    if not isinstance(value, dict) or node is None:
        raise ConfigurationError(
            '`models:` must map names to model strings, such as `models: {fast: "openai-chat:gpt-4o-mini"}`; got '
            f"{type(value).__name__}.",
            location=location,
        )
    aliases = []
    for name, target in value.items():
        where = node.keys.get(str(name), node.start)
        if not isinstance(name, str) or not isinstance(target, str):
            raise ConfigurationError(
                f"Model alias `{name}: {target}` must map a name to a model string "
                f'(`fast: "openai-chat:gpt-4o-mini"`) or to another alias\'s name; got '
                f"{type(name).__name__}: {type(target).__name__}.",
                location=where,
            )
        aliases.append(ModelAliasDef(name=name, target=target, location=where))
    return aliases


def _failed(problems: list[UsageError], errors: list[UsageError] | None) -> Declarations:
    """Raise the first problem, or note them all and go on when the caller collects errors."""
    if errors is None:
        raise problems[0]
    errors.extend(problems)
    return Declarations()


def _key_loc(node: YamlNode | None, key: str, default: SourceLocation | None) -> SourceLocation | None:
    return node.keys.get(key, default) if node is not None else default


def _template(doc: dict[str, Any], loader: YamlLoader, location: SourceLocation) -> Template:
    try:
        template = Template.model_validate(doc)
    except ValidationError as exc:
        problems, partial = _template_problems(doc, exc, loader, location)
        raise _DeclarationProblems(problems, partial) from None
    return _locate_template(template, doc, loader, location)


# Keys the rest of a template depends on: without them (or with them wrong) nothing else can be checked.
_ESSENTIAL_KEYS = frozenset({"name", "instructions"})
# Passes over a template with shape mistakes: a `model_validator(mode="before")` (a misplaced model setting)
# stops pydantic before the fields are validated, so their mistakes show once it is left out.
_PARTIAL_PASSES = 3


def _template_problems(
    doc: dict[str, Any], exc: ValidationError, loader: YamlLoader, location: SourceLocation
) -> tuple[list[UsageError], PartialTemplate | None]:
    """Every shape mistake of a template, and the template read without them (when the rest is one).

    The keys in error are left out and the rest validated again, until it validates: each pass may find
    mistakes the one before could not reach. A wrong parameter is kept, typed `any` (its own mistake is
    reported; its placeholders still resolve). No partial template when `name`, `instructions` or `params`
    as a whole is wrong: the other checks would only repeat that mistake in other words.
    """
    problems: dict[str, UsageError] = {}
    dropped: set[str] = set()
    current = doc
    nodes: collections.ChainMap[int, YamlNode] = collections.ChainMap({}, loader.nodes)
    for _ in range(_PARTIAL_PASSES):
        found = validation_errors(
            TemplateError,
            "template",
            current,
            exc,
            nodes,
            location,
            keys=_declaration_keys(Template),
            keys_at=_template_keys_at,
        )
        problems.update((str(p), p) for p in found if str(p) not in problems)
        reduced = _without_errors(current, exc, dropped, nodes)
        if reduced is None:
            break
        current = reduced
        try:
            template = Template.model_validate(current)
        except ValidationError as again:
            exc = again
            continue
        located = _locate_template(template, doc, loader, location)
        return in_source_order(problems.values()), PartialTemplate(template=located, dropped=frozenset(dropped))
    return in_source_order(problems.values()), None


def _without_errors(
    doc: dict[str, Any], exc: ValidationError, dropped: set[str], nodes: collections.ChainMap[int, YamlNode]
) -> dict[str, Any] | None:
    """`doc` without the top-level keys in error (`dropped` notes them; `nodes` locates the copies), or None."""
    partial = dict(doc)
    params = dict(doc["params"]) if isinstance(doc.get("params"), dict) else None
    for err in exc.errors():
        loc = err["loc"]
        key = loc[0] if loc and isinstance(loc[0], str) else None
        if key is None or key in _ESSENTIAL_KEYS:
            return None
        if key == "params":
            if params is None or len(loc) < 2 or loc[1] not in params:
                return None
            params[loc[1]] = {"type": "any"}
            dropped.add(f"params.{loc[1]}")
            continue
        partial.pop(key, None)
        dropped.add(key)
    for original, copy in ((doc, partial), (doc.get("params"), params)):
        node = nodes.get(id(original)) if original is not None else None
        if node is not None and copy is not None:
            nodes.maps[0][id(copy)] = node
    if params is not None:
        partial["params"] = params
    return partial


def _locate_template(template: Template, doc: dict[str, Any], loader: YamlLoader, location: SourceLocation) -> Template:
    node = loader.nodes.get(id(doc))
    origins: dict[str, TextOrigin] = {}
    if node is not None:
        for key, loc in node.keys.items():
            origins[key] = TextOrigin(location=loc, block=key in node.block_keys)
        params = doc.get("params")
        pnode = loader.nodes.get(id(params)) if isinstance(params, dict) else None
        if pnode is not None:
            for key, loc in pnode.keys.items():
                origins[f"params.{key}"] = TextOrigin(location=loc)
        tools = doc.get("tools")
        for index, entry in enumerate(tools if isinstance(tools, list) else []):
            tnode = loader.nodes.get(id(entry)) if isinstance(entry, dict) else None
            if tnode is not None:  # a `module:function` string is located by its `tools` key
                origins[f"tools.{index}"] = TextOrigin(location=tnode.start)
        fmt = doc.get("output_format")
        fnode = loader.nodes.get(id(fmt)) if isinstance(fmt, dict) else None
        if fnode is not None:
            for key, loc in fnode.keys.items():
                origins[f"output_format.{key}"] = TextOrigin(location=loc)
    return template.located(location, origins)


def _schema(doc: dict[str, Any], loader: YamlLoader, location: SourceLocation) -> SchemaDef:
    try:
        schema = SchemaDef.model_validate(doc)
    except ValidationError as exc:
        raise _DeclarationProblems(
            validation_errors(
                SchemaError, "schema", doc, exc, loader.nodes, location, keys=_declaration_keys(SchemaDef)
            )
        ) from None
    schema.location = location
    _locate_fields(schema.fields, doc.get("fields"), loader)
    return schema


def _locate_fields(fields: list[FieldDef], raw_fields: Any, loader: YamlLoader) -> None:
    """Each field (nested `fields:` included) points at its `type`, else at its start."""
    if not isinstance(raw_fields, list):
        return
    for field_def, raw in zip(fields, raw_fields, strict=False):
        fnode = loader.nodes.get(id(raw)) if isinstance(raw, dict) else None
        if fnode is not None:
            field_def.location = fnode.keys.get("type", fnode.start)
        if field_def.fields is not None and isinstance(raw, dict):
            _locate_fields(field_def.fields, raw.get("fields"), loader)


def _located(
    kind: type[JsonSchemaDef] | type[PythonSchemaDef],
    doc: dict[str, Any],
    loader: YamlLoader,
    location: SourceLocation,
) -> Any:
    if "base_uri" in doc:
        raise SchemaError("`base_uri` is not a schema key; relative `$ref`s resolve from the file.", location=location)
    try:
        declaration = kind.model_validate(doc)
    except ValidationError as exc:
        problems = validation_errors(
            SchemaError, "schema", doc, exc, loader.nodes, location, keys=_declaration_keys(kind)
        )
        raise _DeclarationProblems(problems) from None
    node = loader.nodes.get(id(doc))
    key = "json_schema" if kind is JsonSchemaDef else "python"
    declaration.location = node.keys.get(key, location) if node is not None else location
    if isinstance(declaration, JsonSchemaDef):
        places: dict[str, SourceLocation] = {}
        _places(doc.get("json_schema"), "", loader, places)
        declaration.set_places(places)
    return declaration


def _places(value: Any, pointer: str, loader: YamlLoader, out: dict[str, SourceLocation]) -> None:
    """Where each part of a JSON Schema written in YAML is, by (unescaped) JSON Pointer."""
    if isinstance(value, dict):
        node = loader.nodes.get(id(value))
        if node is not None:
            out.setdefault(pointer, node.start)
        for key, item in value.items():
            if node is not None and str(key) in node.keys:
                out[f"{pointer}/{key}"] = node.keys[str(key)]
            _places(item, f"{pointer}/{key}", loader, out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _places(item, f"{pointer}/{index}", loader, out)


def _template_keys_at(path: Sequence[Any]) -> list[str] | None:
    """The valid keys of an MCP tool entry (`tools.N`) and of its server (`tools.N.mcp`)."""
    if len(path) == 2 and path[0] == "tools":
        return _declaration_keys(McpToolSpec)
    if len(path) == 3 and path[0] == "tools" and path[2] == "mcp":
        return _declaration_keys(McpServerSpec)
    return None


def _declaration_keys(model: type[BaseModel]) -> list[str]:
    """The keys a declaration accepts (listed for an unknown one); `base_uri` is set by the reader, never written."""
    return [name for name in model.model_fields if name != "base_uri"]
