"""Reading a cases file (`*.cases.yaml`), each key located at its line, and checking its expectations.

A cases file lives in a `tests/` folder inside the templates folder (`templates/tests/NAME.cases.yaml`),
where `TaskSystem.load` and `atomtask check`, which read folders non-recursively, never see it:

```yaml
template: extract_contact          # the template of every case (a case may name its own)
templates: ..                      # optional: the templates to load, relative to this file (default `..`)
cases:
  - name: signature block
    inputs: {text: "Ada Lovelace, ada@example.com"}
    answers:                       # the raw answers, in order: the first, the re-asked one, ...
      - '{"name": "Ada Lovelace", "email": "ada@example.com", "phone": null, "company": null}'
    output: {name: Ada Lovelace, email: ada@example.com, phone: null, company: null}
```

An answer is a string (tool-call arguments for a `mode: tool` template, else the text), or written out
as `{tool_call: <arguments, a mapping or raw text>}` or `{text: <raw text>}`. The expectations:
`output` (the exact output), `expect` (a predicate, or a list of them, on `output`), `expect_subset`
(a partial match), `expect_failure` (a `FailureReason` value). Mistakes raise `CasesFileError` at
the key's file:line:col with the fix.

Before any case runs, its expectations are checked against its template's output class: a field named
in `output:`, in `expect_subset:` (at any depth) or read by an `expect:` predicate (`output.name`) must
be a field of the output class (a typo is a `CasesFileError` with a did-you-mean, not a failing case
that reads as schema drift), and predicates are type-checked with the workflow expression language's
checker (`output.score > "3"` is refused).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import yaml
from atomtask.errors import CasesFileError, SourceLocation, did_you_mean

if TYPE_CHECKING:
    from atomtask.loading._template_registry import CompiledTemplate
    from atomtask.workflows._expressions import Expression, PathRef

__all__ = [
    "CASES_SUFFIXES",
    "CASE_KEYS",
    "FILE_KEYS",
    "Answer",
    "Case",
    "CaseFile",
    "case_files",
    "check_expectations",
    "read_case_file",
    "read_case_text",
]

CASES_SUFFIXES = (".cases.yaml", ".cases.yml")
FILE_KEYS = ("template", "templates", "cases")
CASE_KEYS = ("name", "template", "inputs", "answers", "output", "expect", "expect_subset", "expect_failure")
_ANSWER_KEYS = ("text", "tool_call", "tool")
_MISSING: Any = attrs.NOTHING


@attrs.frozen(kw_only=True)
class Answer:
    """One recorded model answer: raw text, or tool-call arguments (`kind` "tool_call"), as the model sent it."""

    kind: str | None  # "text", "tool_call", or None: as the template's output mode asks
    value: str | Mapping[str, Any]
    tool: str | None = None


@attrs.frozen(kw_only=True)
class Case:
    """One golden case: inputs, the recorded answers, and what the run must come to."""

    name: str
    template: str
    inputs: Mapping[str, Any]
    answers: tuple[Answer, ...]
    output: Any  # the exact expected output (JSON form); `attrs.NOTHING` when not given
    expect: tuple[str, ...] = ()
    expect_subset: Any  # a partial match; `attrs.NOTHING` when not given
    expect_failure: str | None = None
    location: SourceLocation
    keys: Mapping[str, SourceLocation] = attrs.field(factory=dict)
    index: int = 0
    # Where each key under `output` / `expect_subset` is (`("output", "address", "city")`), and where each
    # `expect` predicate's text starts (`("expect", 0)`): for the checks against the output class.
    paths: Mapping[tuple[str | int, ...], SourceLocation] = attrs.field(factory=dict)

    @property
    def has_output(self) -> bool:
        return self.output is not attrs.NOTHING

    @property
    def has_subset(self) -> bool:
        return self.expect_subset is not attrs.NOTHING

    def where(self, key: str) -> SourceLocation:
        """The location of `key` in this case, else of the case itself."""
        return self.keys.get(key, self.location)

    def where_path(self, path: tuple[str | int, ...]) -> SourceLocation:
        """The location of the key at `path` (`("output", "name")`), else of its first key."""
        return self.paths.get(path) or self.where(str(path[0]))


@attrs.frozen(kw_only=True)
class CaseFile:
    """A cases file: its path, the templates folder it runs against, its cases."""

    path: Path
    templates: Path
    template_location: SourceLocation | None
    cases: tuple[Case, ...]


def case_files(paths: list[str | Path]) -> list[Path]:
    """The cases files given, and those found (recursively, sorted) under the folders given."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(CASES_SUFFIXES)))
        elif path.is_file():
            found.append(path)
        else:
            raise CasesFileError(
                f"No such file or folder: {str(path)!r}. Pass a cases file (NAME.cases.yaml) or a folder holding some."
            )
    return found


class _Loader(yaml.SafeLoader):
    """A safe loader that keeps the node of every mapping, by the mapping's `id()`, for its keys' locations."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.nodes: dict[int, yaml.MappingNode] = {}


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> Iterator[dict[Any, Any]]:
    data: dict[Any, Any] = {}
    yield data
    data.update(loader.construct_mapping(node))
    loader.nodes[id(data)] = node


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)


def _at(file: str, mark: yaml.Mark) -> SourceLocation:
    return SourceLocation(file=file, line=mark.line + 1, column=mark.column + 1)


def read_case_file(path: Path) -> CaseFile:
    """Read and check the shape of the cases file at `path` (not yet against its templates)."""
    from atomtask.schemas._sources import read_source

    try:
        text = read_source(path, error=CasesFileError)
    except OSError as exc:
        raise CasesFileError(f"Cannot read cases file {str(path)!r} ({exc.strerror}).") from None
    return read_case_text(text, path)


def read_case_text(text: str, path: Path) -> CaseFile:
    """The cases of `text`, read from the file `path` (for locations and the default templates folder)."""
    file = str(path)
    loader: _Loader | None = None
    try:
        loader = _Loader(text)  # PyYAML's reader refuses a NUL or another control character here, before parsing
        doc = loader.get_single_data()
    except yaml.YAMLError as exc:
        from atomtask.loading._yaml import yaml_problem

        problem, where = yaml_problem(exc, text, file)
        fix = "" if isinstance(exc, yaml.reader.ReaderError) else "; fix the syntax"
        raise CasesFileError(f"Malformed YAML: {problem}{fix}.", location=where) from None
    except RecursionError:
        raise CasesFileError(
            "The cases file nests too deep to read; flatten its values.", location=SourceLocation(file=file)
        ) from None
    finally:
        if loader is not None:
            loader.dispose()
    return _Reader(file, loader.nodes).case_file(doc, path)


@attrs.define
class _Reader:
    file: str
    nodes: dict[int, yaml.MappingNode]

    def keys(self, mapping: dict[Any, Any]) -> dict[str, SourceLocation]:
        node = self.nodes.get(id(mapping))
        if node is None:
            return {}
        return {str(k.value): _at(self.file, k.start_mark) for k, _ in node.value}

    def start(self, mapping: dict[Any, Any]) -> SourceLocation:
        node = self.nodes.get(id(mapping))
        return _at(self.file, node.start_mark) if node is not None else SourceLocation(file=self.file, line=1)

    def unknown_keys(self, mapping: dict[Any, Any], valid: tuple[str, ...], what: str) -> None:
        located = self.keys(mapping)
        for key in mapping:
            if key not in valid:
                hint = did_you_mean(str(key), valid) or f" Valid keys: {', '.join(valid)}."
                raise CasesFileError(f"Unknown key {key!r} in {what}.{hint}", location=located.get(str(key)))

    def case_file(self, doc: Any, path: Path) -> CaseFile:
        if not isinstance(doc, dict):
            raise CasesFileError(
                "A cases file is a mapping with `template:` and a `cases:` list; this one holds "
                f"{type(doc).__name__ if doc is not None else 'nothing'}.",
                location=SourceLocation(file=self.file, line=1, column=1),
            )
        self.unknown_keys(doc, FILE_KEYS, "a cases file")
        keys = self.keys(doc)
        default = doc.get("template")
        if default is not None and not isinstance(default, str):
            raise CasesFileError("`template` is the name of a template; write a string.", location=keys["template"])
        folder = doc.get("templates", "..")
        if not isinstance(folder, str):
            raise CasesFileError(
                "`templates` is a folder or file path relative to the cases file.", location=keys["templates"]
            )
        raw_cases = doc.get("cases")
        if not isinstance(raw_cases, list) or not raw_cases:
            raise CasesFileError(
                "`cases` must be a non-empty list of cases (each with `inputs`, `answers` and an expectation).",
                location=keys.get("cases", self.start(doc)),
            )
        cases = tuple(self.case(raw, index, default, keys["cases"]) for index, raw in enumerate(raw_cases))
        names: dict[str, Case] = {}
        for case in cases:
            if case.name in names:
                raise CasesFileError(
                    f"Two cases are named {case.name!r} (the first at line {names[case.name].location.line}); "
                    "give each case its own `name`.",
                    location=case.where("name"),
                )
            names[case.name] = case
        templates = Path(os.path.normpath(path.parent / folder))
        return CaseFile(path=path, templates=templates, template_location=keys.get("template"), cases=cases)

    def case(self, raw: Any, index: int, default: str | None, listed: SourceLocation) -> Case:
        if not isinstance(raw, dict):
            raise CasesFileError(
                f"Case #{index + 1} is a {type(raw).__name__}; write a mapping with `name`, `inputs`, `answers`.",
                location=listed,
            )
        name = raw.get("name", f"case {index + 1}")
        what = f"case {name!r}"
        self.unknown_keys(raw, CASE_KEYS, what)
        keys = self.keys(raw)
        location = self.start(raw)
        template = raw.get("template", default)
        if not isinstance(name, str) or not isinstance(template, str):
            key = "name" if not isinstance(name, str) else "template"
            message = (
                f"Give {what} a `template:` (or the file a top-level `template:`)."
                if template is None
                else f"`{key}` of case #{index + 1} must be a string."
            )
            raise CasesFileError(message, location=keys.get(key, location))
        inputs = raw.get("inputs", {})
        if not isinstance(inputs, dict):
            raise CasesFileError(
                f"`inputs` of {what} must be a mapping of parameter names to values.", location=keys["inputs"]
            )
        answers = raw.get("answers", [])
        if not isinstance(answers, list):
            raise CasesFileError(
                f"`answers` of {what} must be a list of the model's raw answers, in order.", location=keys["answers"]
            )
        expect = raw.get("expect", [])
        expect = [expect] if isinstance(expect, str) else expect
        if not isinstance(expect, list) or not all(isinstance(e, str) for e in expect):
            raise CasesFileError(
                f"`expect` of {what} is a predicate on the output (`output.score >= 3`), or a list of them.",
                location=keys["expect"],
            )
        failure = raw.get("expect_failure")
        if failure is not None:
            self.check_failure(failure, what, keys["expect_failure"])
            clash = [k for k in ("output", "expect", "expect_subset") if k in raw]
            if clash:
                raise CasesFileError(
                    f"{what} expects a failure, so it has no output to check: remove `{clash[0]}` or `expect_failure`.",
                    location=keys[clash[0]],
                )
        return Case(
            name=name,
            template=template,
            inputs=inputs,
            answers=tuple(self.answer(a, n, what, keys.get("answers", location)) for n, a in enumerate(answers)),
            output=raw.get("output", _MISSING),
            expect=tuple(expect),
            expect_subset=raw.get("expect_subset", _MISSING),
            expect_failure=failure,
            location=location,
            keys=keys,
            index=index,
            paths=self.value_paths(raw),
        )

    def value_paths(self, raw: dict[Any, Any]) -> dict[tuple[str | int, ...], SourceLocation]:
        """The locations of the keys nested under `output` and `expect_subset`, and of each `expect` text."""
        found: dict[tuple[str | int, ...], SourceLocation] = {}

        def visit(value: Any, path: tuple[str | int, ...]) -> None:
            if isinstance(value, dict):
                located = self.keys(value)
                for key, sub in value.items():
                    if str(key) in located:
                        found[(*path, str(key))] = located[str(key)]
                    visit(sub, (*path, str(key)))
            elif isinstance(value, list):
                for number, sub in enumerate(value):
                    visit(sub, (*path, number))

        for key in ("output", "expect_subset"):
            if key in raw:
                visit(raw[key], (key,))
        node = self.nodes.get(id(raw))
        for key_node, value_node in node.value if node is not None else ():
            if key_node.value == "expect":
                texts = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                for number, text in enumerate(texts):
                    if text.start_mark.line != text.end_mark.line:
                        continue  # over several lines: its errors point at `expect`
                    start = _at(self.file, text.start_mark)
                    if isinstance(text, yaml.ScalarNode) and text.style in ("'", '"'):
                        start = attrs.evolve(start, column=(start.column or 0) + 1)  # past the opening quote
                    found[("expect", number)] = start
        return found

    def check_failure(self, failure: Any, what: str, where: SourceLocation) -> None:
        from atomtask.system._results import FailureReason

        reasons = [r.value for r in FailureReason]
        if failure not in reasons:
            hint = did_you_mean(str(failure), reasons) or f" Reasons: {', '.join(reasons)}."
            raise CasesFileError(f"Unknown failure reason {failure!r} in {what}.{hint}", location=where)

    def answer(self, raw: Any, number: int, what: str, where: SourceLocation) -> Answer:
        if isinstance(raw, str):
            return Answer(kind=None, value=raw)
        if isinstance(raw, dict):
            self.unknown_keys(raw, _ANSWER_KEYS, f"answer {number + 1} of {what}")
            located = self.keys(raw)
            tool = raw.get("tool")
            if "text" in raw and "tool_call" not in raw and isinstance(raw["text"], str) and tool is None:
                return Answer(kind="text", value=raw["text"])
            call = raw.get("tool_call")
            if "text" not in raw and isinstance(call, str | dict) and (tool is None or isinstance(tool, str)):
                return Answer(kind="tool_call", value=call, tool=tool)
            where = self.start(raw) if not located else next(iter(located.values()))
        raise CasesFileError(
            f"Answer {number + 1} of {what} is not an answer: write the raw answer as a string, or "
            '`{tool_call: {...arguments...}}` (with `tool: NAME` to name the tool), or `{text: "..."}`.',
            location=where,
        )


class _UnknownPath(Exception):
    """A predicate reads a path the output class does not have (carries the message and the path's offset)."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


def check_expectations(case: Case, compiled: CompiledTemplate, predicates: tuple[Expression, ...]) -> None:
    """Refuse a field of `output`, `expect_subset` or an `expect` predicate that the output class lacks."""
    root: Any = compiled.output_cls if compiled.output_cls is not None else str
    name = getattr(root, "__name__", str(root))
    if case.has_output:
        _check_keys(case, case.output, root, ("output",), name)
    if case.has_subset:
        _check_keys(case, case.expect_subset, root, ("expect_subset",), name)
    for number, predicate in enumerate(predicates):
        _check_predicate(case, predicate, number, root, name)


def _check_keys(case: Case, value: Any, annotation: Any, path: tuple[str | int, ...], name: str) -> None:
    from atomtask.errors import did_you_mean
    from atomtask.workflows._types import field_names, walk

    if isinstance(value, dict):
        names = field_names(annotation)
        for key, sub in value.items():
            try:
                inner = walk(annotation, str(key))
            except LookupError as exc:
                where = _dotted(path)
                hint = did_you_mean(str(key), names or ()) or (f" Its fields: {', '.join(names)}." if names else "")
                raise CasesFileError(
                    f"`{where}` of case {case.name!r}: {exc} (the output of template {case.template!r} is "
                    f"{name}).{hint}",
                    location=case.where_path((*path, str(key))),
                ) from None
            _check_keys(case, sub, inner, (*path, str(key)), name)
    elif isinstance(value, list):
        for number, sub in enumerate(value):
            try:
                inner = walk(annotation, number)
            except LookupError:
                return  # a list where the class has none: the replay reports the value itself
            _check_keys(case, sub, inner, (*path, number), name)


def _dotted(path: tuple[str | int, ...]) -> str:
    return str(path[0]) + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[1:])


def _check_predicate(case: Case, predicate: Expression, number: int, root: Any, name: str) -> None:
    from atomtask.errors import ExpressionTypeError
    from atomtask.workflows._expressions import expression_type

    def path_type(ref: PathRef) -> Any:
        return _path_type(ref, root, name)

    try:
        expression_type(predicate, path_type)
    except _UnknownPath as exc:
        raise CasesFileError(
            f"`expect: {predicate.text}` of case {case.name!r}: {exc.message}",
            location=_at_offset(case, number, predicate.text, exc.offset),
        ) from None
    except ExpressionTypeError as exc:
        raise CasesFileError(
            f"`expect` of case {case.name!r}: {exc.message.rstrip('.')}.",
            location=_at_offset(case, number, predicate.text, exc.offset),
        ) from None


def _path_type(ref: PathRef, root: Any, name: str) -> Any:
    from atomtask.errors import near_names
    from atomtask.workflows._types import field_names, walk

    current, walked = root, ref.root
    for part in ref.parts:
        try:
            current = walk(current, part)
        except LookupError as exc:
            names = field_names(current) or []
            close = near_names(str(part), names)
            hint = f" Did you mean `{walked}.{close[0]}`?" if close else ""
            listing = f" Fields there: {', '.join(names)}." if names else ""
            raise _UnknownPath(f"unknown path `{ref.text}` ({name}): {exc}.{hint}{listing}", ref.offset) from None
        walked += f"[{part}]" if isinstance(part, int) else f".{part}"
    return current


def _at_offset(case: Case, number: int, text: str, offset: int) -> SourceLocation:
    """Where `offset` of the predicate's text is in the file (exact when the text is on one line)."""
    start = case.where_path(("expect", number))
    if start is not case.paths.get(("expect", number)) or "\n" in text or start.column is None:
        return start
    return attrs.evolve(start, column=start.column + offset)
