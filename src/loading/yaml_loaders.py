"""YAML text to Python data that remembers where each mapping and each of its values is (`yaml_documents`).

Two loaders make the same data, nodes and errors. `_LocatingLoader`, the reference, composes in
Python and refuses nesting deeper than `MAX_NESTING` (aliases included) as it is met, before
anything recurses further. `_FastLoader` composes with libyaml (in C) and builds plain documents by
a direct walk, about twice as fast; it reads a text only where it cannot differ from the reference:
libyaml present, no YAML error anywhere in the text (an error's message is the reference's), and no
nesting deep enough for libyaml's recursive composer to hurt.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import yaml
from atomtask.loading.yaml_nodes import YamlNode
from atomtask.schemas.source_text import MAX_NESTING, too_deep
from atomtask.system.errors import SourceLocation
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

__all__ = ["YamlLoader", "yaml_documents"]


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
