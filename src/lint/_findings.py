"""What `atomtask check` reports: findings, each under a stable code documented by a `Rule`, in a `CheckReport`.

The workflow codes E110-E125 (`atomtask check --explain E113`) take their code and rule name from the
`WorkflowError` classes themselves, so a finding and its explanation cannot drift apart; here are
their one-line summaries and examples, beside the rules of every other code.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any

import attrs
from atomtask.errors import WORKFLOW_ERROR_CODES, SourceLocation

__all__ = ["RULES", "WORKFLOW_RULE_TEXTS", "CheckReport", "Finding", "Rule", "Severity", "matches"]

_TEXTS: dict[str, tuple[str, str]] = {
    "E110": (
        "a workflow's shape is wrong",
        """
An unknown or mistyped key, a step that runs nothing or two things (`task`, `workflow`, `parallel`; a
`call` beside one of them is E121), a step id used twice, a state field with a bad type, a model string
or model setting that is wrong.

    steps:
      - id: research
        task: research_topic
        retrys: 2        # E110 Invalid workflow 'article_writer': `steps.0.retrys`: unknown key; valid keys: id, ...
""",
    ),
    "E111": (
        "a step runs a task or sub-workflow that is not registered",
        """
The task (a template from YAML, `.sexp` or Python) or the sub-workflow must be registered before the
workflow (load them from the same folders). A state `schema: Name` must name a registered schema.

    - id: research
      task: reseach_topic   # E111 ... task 'reseach_topic', which is not registered. Did you mean 'research_topic'?
""",
    ),
    "E112": (
        "an expression or placeholder is outside the expression language",
        """
Expressions (`when`, `route`, `set`, `for_each`) are a small, safe language: `state.x.y` paths, literals,
comparisons, `and`/`or`/`not`, `in`, arithmetic and `len`; never Python. Placeholders are `{{state.x}}`
(and `{{item}}` inside a `for_each` step).

    route:
      - {when: "score < 7", to: revise}   # E112 Unknown name 'score' ... Did you mean `state.score`?
""",
    ),
    "E113": (
        "a `state.x.y` path names no field of the state",
        """
Every path in a placeholder, an expression or an output mapping must exist in the state schema (and in
the classes of its fields); the finding points at the path's column and suggests the near name.

    route:
      - {when: "state.scroe < 7", to: revise}   # E113 Unknown path `state.scroe` ... Did you mean `state.score`?
""",
    ),
    "E114": (
        "types do not fit: an input and its parameter, an output and its state field, an operator",
        """
A `str` field bound to an `int` parameter, an output stored in a field of another type, a `set` whose
value does not fit, a `str` compared with a number, `for_each` over something that is not a list.
Widening is fine (`int` into `float`).

    inputs: {score: "{{state.topic}}"}   # E114 Step 'revise' passes {{state.topic}} (str) to parameter 'score' (int)
""",
    ),
    "E115": (
        "a required parameter is unbound, or an input or output names nothing",
        """
Every required parameter of the task must be bound under `inputs`, every input must be a parameter, and
every `outputs` entry must name an output field of the task (`output: field` stores the whole answer).

    outputs: {research: sumary}   # E115 ... 'sumary', which is not an output field ... Did you mean 'summary'?
""",
    ),
    "E116": (
        "a step reads a field that no step has written on some path to it",
        """
The data-flow check, per path through the routes: a field a step reads must be a run input, have a
default, or be written by a step on every path before it (a skipped or failed-and-continued step does
not count as writing).

    # `research` has `when:`, so on the path where it is skipped nothing writes `state.research`:
    - id: write
      inputs: {notes: "{{state.research}}"}   # E116 Step 'write' reads `state.research` but on the path
                                              # research (skipped) -> write no step has written it ...
""",
    ),
    "E117": (
        "a route target does not exist, a step is unreachable, or a route entry is never taken",
        """
Route and `on_failure: {to: ...}` targets must be step ids (or `end`); every step must be reachable from
the first; an entry after one without `when` is dead.

    route:
      - {when: "state.score < 7", to: revse}   # E117 ... 'revse', which is not a step ... Did you mean 'revise'?
""",
    ),
    "E118": (
        "a cycle has no `max_visits` bound, or a workflow runs itself",
        """
Every loop of steps needs a bound, so a run always ends: `max_visits: N` on one step of the cycle (the
run fails with `max_visits_exceeded` if it is reached, or ends or goes on as `on_max_visits` says; an
`on_max_visits: {to: STEP}` back inside the loop would never end it). Workflows cannot run each other
in a circle.

    - id: revise
      route: [{to: review}]   # E118 Steps review -> revise -> review form a cycle with no bound. Add `max_visits: N`
""",
    ),
    "E119": (
        "two steps of one `parallel` group write the same state field",
        """
The steps of a group run at once on the same state and join before the next step; two of them writing
one field would make the result depend on timing. Write different fields and combine them after.

    parallel:
      - {id: a, task: summarize, inputs: {...}, output: summary}
      - {id: b, task: summarize, inputs: {...}, output: summary}   # E119
""",
    ),
    "E120": (
        "a migration is wrong: its versions do not chain, or a field, value, step or function it names",
        """
`migrations` turn the state of a run recorded under an older `version` into the current one, on resume.
Checked before any run: one migration per `from` version, chaining to the current `version` with no
circle; the fields written (`rename` targets, `set`, `convert`) exist in the current state (or a later
migration drops or renames them); a dropped or renamed field was not already removed by the migration
before; `set` values fit their field; `resume_at` is a step; `call` imports from an `importable` package.

    version: "1.2"
    migrations:
      - {from: "1.0", to: "1.1", rename: {title: headlne}}   # E120 ... writes `state.headlne` (`rename`), but the
                                                             # state of the current version has no field ...
      - {from: "1.1", to: "1.2", set: {score: high}}         # E120 ... sets `state.score` (int) to 'high' ...
""",
    ),
    "E121": (
        "a code step (`call:`) is declared wrong",
        """
A step with `call: package.module:function` runs that Python function instead of a task. It runs
nothing else (no `task`, `workflow` or `parallel` beside it), takes none of the keys that only a model
call has (`model`, `model_settings`, `repair`, `limits`, `on_failure: {retry_with: ...}`), and names
the function as `package.module:function`. Its own keys: `retries` (re-run after an exception) and
`timeout` (`30s`, `2m`, seconds) for each run.

    - id: fetch
      call: myshop.orders:fetch_order
      task: fetch_order        # E121 Step 'fetch' has `call` and `task`; a step runs one of them ...
""",
    ),
    "E122": (
        "a code step's module cannot be imported",
        """
The module must be inside one of the packages the `TaskSystem` may import from (`importable=[...]`),
exist, and import without raising; the finding says which of these failed.

    call: myshop.order:fetch_order   # E122 Cannot import module 'myshop.order' named by 'myshop.order:fetch_order' ...
""",
    ),
    "E123": (
        "a code step's module has no function of that name",
        """
The module imported, but the name after `:` is not a function in it (or is not callable).

    call: myshop.orders:fetch_ordr   # E123 ... has no function 'fetch_ordr' ... Did you mean 'fetch_order'?
""",
    ),
    "E124": (
        "a code step's function has a parameter or return without a type",
        """
The checks read a function's annotations as they read a task's parameters and output schema: every
parameter needs a type, the function a return annotation (`-> None` when it returns nothing), the
parameters are bound by name (no `*args`, `**kwargs` or positional-only ones), and each type is one
Pydantic can validate.

    def fetch_order(order_id):            # E124 ... parameter 'order_id' has no type annotation ...
""",
    ),
    "E125": (
        "an expression is too long or nests too deep",
        """
An expression is read before any run, and the reading (and every later walk over it) must stay small:
at most 10,000 characters, and at most 100 levels of nesting (brackets, `not`, `-`, `if ... else`, a
chain of operators such as `1 + 1 + ...`, calls and methods). The finding points at the bracket or the
term that goes too deep. Split the expression over steps (`set` an intermediate field), or flatten it:
`a and b and c` is flat, `(a + (b + (c + ...)))` is not.

    when: "not not not ... true"   # E125 ... nests more than 100 levels deep here ...
""",
    ),
}

#: (code, rule name, summary, explanation) of each workflow code, in code order.
WORKFLOW_RULE_TEXTS: list[tuple[str, str, str, str]] = [
    (code, WORKFLOW_ERROR_CODES[code].rule, summary, explanation) for code, (summary, explanation) in _TEXTS.items()
]


class Severity(StrEnum):
    """An error fails the check (and would fail at registration or on the first call); a warning fails it only
    with `--strict`."""

    ERROR = "error"
    WARNING = "warning"


@attrs.frozen(kw_only=True)
class Rule:
    """One check: its stable code, severity, a one-line summary and an explanation with an example."""

    code: str
    name: str
    severity: Severity
    summary: str
    explanation: str


@attrs.frozen(kw_only=True)
class Finding:
    """One mistake or risk, where it is, and under which rule."""

    code: str
    severity: Severity
    message: str
    location: SourceLocation | None = None

    def sort_key(self) -> tuple[str, int, int, str, str]:
        loc = self.location
        if loc is None:
            return ("", 0, 0, self.code, self.message)
        return (loc.file or "", loc.line or 0, loc.column or 0, self.code, self.message)

    def to_json(self) -> dict[str, Any]:
        loc = self.location
        return {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "file": loc.file if loc else None,
            "line": loc.line if loc else None,
            "column": loc.column if loc else None,
        }

    def __str__(self) -> str:
        where = str(self.location) if self.location is not None else "<unknown>"
        return f"{where}: {self.code} {self.message}"


@attrs.frozen(kw_only=True)
class CheckReport:
    """The findings of one check (sorted by file, line, column), and what was checked."""

    findings: tuple[Finding, ...]
    files: int
    templates: int
    schemas: int
    workflows: int = 0
    lenient: tuple[str, ...] = ()  # the templates that run `repair: lenient` (values read toward the schema)

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity is Severity.ERROR)

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if f.severity is Severity.WARNING)

    def failed(self, *, strict: bool = False) -> bool:
        """Errors fail a check; warnings fail it only when `strict`."""
        return self.errors > 0 or (strict and self.warnings > 0)


def _rule(code: str, name: str, severity: Severity, summary: str, explanation: str) -> Rule:
    return Rule(code=code, name=name, severity=severity, summary=summary, explanation=explanation.strip("\n"))


E, W = Severity.ERROR, Severity.WARNING

_ALL = [
    # -- E1xx: what registration rejects (the same code raises at `TaskSystem.load` / `register`) -----------
    _rule(
        "E101",
        "unreadable-file",
        E,
        "a declaration file cannot be parsed or has the wrong shape",
        """
The file is not valid YAML (or S-expression, or JSON), or a mapping in it is neither a template nor a
schema, or a key is unknown or has the wrong type.

    name: greet
    instructions: Say hi
    retrys: 2            # E101 Invalid template 'greet': `retrys`: unknown key
""",
    ),
    _rule(
        "E102",
        "template-error",
        E,
        "a template is invalid",
        """
A placeholder names no declared parameter, a placeholder is malformed, a `{{param.field}}` path does
not exist in the parameter's schema, or a parameter default does not fit its type.

    params: {text: str}
    instructions: Summarise {{txt}}   # E102 ... is not a declared parameter. Did you mean 'text'?
""",
    ),
    _rule(
        "E103",
        "schema-error",
        E,
        "a schema or type string is invalid or cannot be resolved",
        """
An unknown schema name (in `output_format.schema`, a parameter type or a field type), a bad type
string, an option that does not apply to the field's type, a default that does not match.

    output_format: {type: json, schema: Contct}   # E103 Unknown schema 'Contct'. Did you mean 'Contact'?
""",
    ),
    _rule(
        "E104",
        "unknown-provider",
        E,
        "a model string names no provider pydantic-ai knows, or a model name no alias declares",
        """
Checked against the installed pydantic-ai's provider list, without importing any provider SDK. A
name without a provider prefix must be a model alias (`models:`); an alias must stand for a model.

    model: opanai:gpt-4o    # E104 Unknown provider 'opanai'. Did you mean 'openai'?
    model: fsat             # E104 Model 'fsat' ... is not a model alias. Did you mean 'fast'?
""",
    ),
    _rule(
        "E105",
        "duplicate-name",
        E,
        "two different templates or schemas share a name",
        """
Both locations are shown. Identical re-declarations are accepted, as at registration.

    a.yaml:  name: summarize ...
    b.yaml:  name: summarize ...   # E105 Template name 'summarize' is already registered at a.yaml:1:1
""",
    ),
    _rule(
        "E106",
        "python-module",
        E,
        "a module named with `--python` cannot be imported",
        """
The module (or a template or schema it registers at import time) raised; the finding points at the
line that raised.

    atomtask check --python myapp.tasks   # E106 ... ModuleNotFoundError: No module named 'myapp'
""",
    ),
    # -- E130-E132: templates' tools, checked by importing their modules in a helper process ------------------
    _rule(
        "E130",
        "tool-import",
        E,
        "a tool's `module:function` cannot be imported",
        """
The module is missing or raised while importing, the function is not in it, or the module is outside
the packages declarations may import from (`TaskSystem(importable=[...])`, `--allow-import PKG`,
`$ATOMTASK_IMPORTABLE`). The modules are imported in a helper process, never in `check`'s own.

    tools: [shop.prices:lookup_prize]   # E130 ... has no function 'lookup_prize'. Did you mean 'lookup_price'?
""",
    ),
    _rule(
        "E131",
        "tool-signature",
        E,
        "a tool's parameters do not make a JSON Schema",
        """
The model receives a JSON Schema made from the function's type hints (pydantic-ai's function tools):
every parameter needs one, `*args`/`**kwargs` cannot be filled by name, and the types must be ones
pydantic can describe. Options (`allow_hosts: [...]`) are for tool factories only.

    def lookup_price(product): ...      # E131 Parameter 'product' of tool 'shop.prices:lookup_price' has no type hint
""",
    ),
    _rule(
        "E132",
        "tool-name",
        E,
        "two tools of a template share a name",
        """
The model calls tools by name: two functions with one name (give one `name:`), an MCP `prefix` used
twice, two MCP servers without a prefix, or a function named `final_result` (pydantic-ai's output tool).

    tools: [shop.a:lookup, shop.b:lookup]   # E132 The tool name 'lookup' is used twice in template 'quote'
""",
    ),
    # -- E110-E125: workflows, from the checks `WorkflowRegistry.register` runs ----------------------------------
    *(_rule(code, name, E, summary, text) for code, name, summary, text in WORKFLOW_RULE_TEXTS),
    # -- W1xx: what is read but not taken (or not enforced) as written -------------------------------------------
    _rule(
        "W101",
        "json-file-not-a-schema",
        W,
        "a `.json` file in a declarations folder is skipped: it is not a JSON Schema",
        """
A `.json` file is read as a JSON Schema named after the file. One holding an object with no JSON Schema
keyword at all (no `type`, `properties`, `$ref`, `$schema`, `items`, `enum`, ...) is a data or
configuration file, not a schema: it is skipped (`TaskSystem.load` logs `json_file_skipped`) rather
than becoming a schema that accepts anything.

    templates/settings.json:1:1: W101 'settings.json' is skipped: it holds a JSON object with no JSON Schema keyword
""",
    ),
    _rule(
        "W102",
        "json-schema-keyword-ignored",
        W,
        "a JSON Schema keyword looks misspelt, or belongs to another draft: it is ignored, not enforced",
        """
JSON Schema ignores keywords it does not know, so the schema loads, but a misspelt keyword
(`minimun`, `additonalProperties`, `type:`) or one of another draft than the schema's (`const` under
draft-04, `dependencies` under 2020-12) constrains nothing. Vendor keywords (`x-...`, `_...`) and names
far from every keyword (`javaType`, `tsType`) are not reported. `strict_schema: true` on the schema
declaration refuses the schema instead; `--strict` fails the check.

    {"type": "object", "additonalProperties": false}
    # W102 JSON Schema 'Order': unknown keyword 'additonalProperties' at `/`. Did you mean 'additionalProperties'?
""",
    ),
    _rule(
        "W103",
        "json-schema-format-unchecked",
        W,
        "a JSON Schema `format` is not checked: it is an annotation",
        """
`format` is enforced for the 2020-12 formats (`date`, `date-time`, `time`, `duration`, `email`,
`idn-email`, `hostname`, `idn-hostname`, `ipv4`, `ipv6`, `uri`, `uri-reference`, `iri`, `iri-reference`,
`uri-template`, `uuid`, `json-pointer`, `relative-json-pointer`, `regex`) and the OpenAPI formats with
an obvious check (`int32`, `int64`, `float`, `double` on numbers; `byte`: base64 text). Any other
format is an annotation, as JSON Schema says: the schema loads, values are not validated against it
(`binary` and `password`, hints by definition, are not reported).
Formats are case-sensitive (`URI` is not `uri`); a regular expression belongs in `pattern`.
`strict_schema: true` on the schema declaration refuses the schema instead; `--strict` fails the check.

    {"type": "string", "format": "URI"}
    # W103 JSON Schema 'Link': `format` 'URI' at `/` is not one that is checked ... Did you mean 'uri'?
""",
    ),
    # -- W11x: workflows that are valid but look wrong ---------------------------------------------------------
    _rule(
        "W110",
        "unread-state-field",
        W,
        "a step writes state fields, and no step after it reads any of them",
        """
The values are computed (often paid for) and then never used: usually a prompt that forgot to read
them. What the last steps write is taken as a result of the run and not reported.

    - {id: fetch, call: "shop.orders:fetch_order", inputs: {order_id: "{{state.order_id}}"}, output: order}
    - {id: reply, task: order_reply, inputs: {question: "{{state.question}}"}, output: reply}
      # W110 Step 'fetch' writes `state.order`, but no step after it reads it
""",
    ),
    _rule(
        "W111",
        "dropped-answer",
        W,
        "a step runs a task, sub-workflow or function and stores its answer nowhere",
        """
Without `output`, `outputs` or `collect` the answer is dropped once it is paid for. A function that
returns nothing (`-> None`) is not reported.

    - {id: summarize, task: summarize, inputs: {text: "{{state.text}}"}}   # W111 ... stores its answer nowhere
""",
    ),
    _rule(
        "W112",
        "unread-input",
        W,
        "a run input is read by no step",
        """
The caller must give it (or it has a default), but no input, condition or `set` reads it.

    state: [{name: text, type: str}, {name: locale, type: str}]   # W112 Run input `locale` is read by no step
""",
    ),
    # -- W2xx: prompt and template quality --------------------------------------------------------------------
    _rule(
        "W201",
        "unused-param",
        W,
        "a declared parameter is used in neither `instructions` nor `system`",
        """
The caller must pass it (or it has a default) but the model never sees it.

    params: {text: str, locale: str}
    instructions: Summarise {{text}}      # W201 Parameter 'locale' ... is never used
""",
    ),
    _rule(
        "W202",
        "input-not-in-instructions",
        W,
        "a required parameter appears only in `system`",
        """
A required input the instructions never mention: the task the model is asked to do does not include
it, which usually means it was meant to be in the instructions.

    params: {text: str, tone: str}
    system: Write in a {{tone}} tone.
    instructions: Summarise the document.   # W202 Required parameter 'text' ...
""",
    ),
    _rule(
        "W203",
        "field-without-description",
        W,
        "an output field has no description",
        """
Field descriptions are what the model reads about each field (they go into the JSON Schema it gets).

    fields:
      - name: score
        type: float                      # W203 Field 'score' of 'Review' has no description
""",
    ),
    _rule(
        "W204",
        "reasoning-after-answer",
        W,
        "a reasoning field comes after the answer it should precede",
        """
Models write fields in order; reasoning written after the answer cannot inform it. Judged on the roles
of the output's top-level fields (nested objects are not looked into): a reasoning field is a text field
named like `reasoning`, `rationale`, `reason`, `explanation`, `thinking`, `justification` (or described
as the reasoning); an answer field is a choice (enum, literal), a flag, a number, or a field named like
`answer`, `verdict`, `label`, `category`, `score`. Free text such as `analysis` or `summary` is neither.

    fields:
      - {name: category, type: 'literal["bug", "feature"]'}
      - {name: reasoning, type: str}     # W204 'reasoning' comes after 'category'
""",
    ),
    _rule(
        "W205",
        "confusable-enum-values",
        W,
        "enum or literal values differ only by case or whitespace",
        """
The model picks one spelling at random; validation then accepts only the exact one.

    type: literal["Bug", "bug ", "feature"]   # W205 'Bug' and 'bug ' differ only by case or whitespace
""",
    ),
    _rule(
        "W206",
        "single-brace-placeholder",
        W,
        "a `{param}` with single braces in `instructions` or `system`: sent as written, not inserted",
        """
Placeholders are `{{param}}`; `{param}` naming a declared parameter is valid text, so the model receives
the braces and the name, not the value. Almost always a brace was lost. (Registration logs it as
`single_brace_placeholder`; check reports it here.)

    params: {text: str}
    instructions: Summarise {text}   # W206 '{text}' in the instructions of template 'summarize' is sent ...
""",
    ),
    # -- P3xx: provider compatibility, from what pydantic-ai does to the schema for the template's model --------
    _rule(
        "P301",
        "output-mode-unsupported",
        E,
        "the model's profile does not support the template's output mode",
        """
pydantic-ai raises at call time (`Native structured output is not supported by this model.`).

    model: anthropic:claude-3-haiku-20240307
    output_format: {type: json, schema: Contact, mode: native}   # P301
""",
    ),
    _rule(
        "P302",
        "schema-rejected",
        E,
        "pydantic-ai's schema transformer for the model rejects the output schema",
        """
For example a recursive schema under a provider whose transformer must inline every `$ref`.
""",
    ),
    _rule(
        "P303",
        "not-strict",
        W,
        "the output schema is not strict-compatible, so the provider will not enforce it",
        """
pydantic-ai turns strict mode on only when the transformed schema is strict-compatible. OpenAI strict
mode needs every property required, no `default`, and no `minLength`/`pattern`-like keywords on some
endpoints; without it the answer is not constrained and a malformed one costs a retry.

    fields:
      - {name: email, type: "str?"}   # P303 (openai-chat:gpt-4o) 'email' is not required; has a default
""",
    ),
    _rule(
        "P304",
        "keyword-dropped",
        W,
        "the provider's schema transformer drops a keyword of the output schema",
        """
The keyword never reaches the provider; validation still checks it, so answers that break it cost a
retry. (Google, for example, drops `exclusiveMinimum`.)

    fields:
      - {name: score, type: float, gt: 0}   # P304 (google:gemini-2.5-flash) `exclusiveMinimum` dropped
""",
    ),
    _rule(
        "P305",
        "constraint-in-description",
        W,
        "a constraint is moved into the description, not enforced",
        """
The transformer removes a constraint keyword and writes it into the field's description; the provider
does not enforce it, the model merely reads it.

    fields:
      - {name: day, type: date}   # P305 (google:...) `format: date` moved into the description
""",
    ),
    _rule(
        "P306",
        "dict-field-empty",
        W,
        "the provider drops `additionalProperties`, so a dict field comes back empty",
        """
A `dict[K, V]` field is an object whose keys are given by `additionalProperties`; a provider that drops
it (or forces it to false) only allows `{}`. Use a list of key/value objects instead.

    fields:
      - {name: scores, type: "dict[str, int]"}   # P306
""",
    ),
    _rule(
        "P307",
        "media-unsupported",
        E,
        "the model cannot take the template's images, documents or audio",
        """
A parameter typed `image`, `document` or `audio` is sent beside the instructions; a model whose
pydantic-ai model class or profile cannot take that kind refuses the call before any request. (Which
document types a model reads, such as PDFs but not Word files, is checked when the task runs.)

    model: groq:llama-3.3-70b-versatile
    params: {contract: document}   # P307 Parameter 'contract' is typed `document`, but model ... cannot take documents
""",
    ),
    _rule(
        "P308",
        "output-mode-not-served",
        E,
        "the local server at `--base-url` cannot take the template's output mode",
        """
Checked with `--base-url` (and `--server`, else the kind of server is asked of it once): each kind of
local OpenAI-compatible server takes structured output in its own way (`atomtask.loading` server
profiles). llama-cpp-python enforces a tool choice only by name, which cannot name the output tool
while the template's own tools are still to be called, and returns no tool call it was not forced to
make; a server with no JSON Schema response format cannot take `mode: native`. The call would fail
before any request; the message names the modes that work there.

    # atomtask check --model openai-chat:smollm2 --base-url http://127.0.0.1:8011/v1
    tools: [myapp.tools:lookup_order]
    output_format: {type: json, schema: Order, mode: tool}   # P308 ... llama-cpp-python ... Use `mode: native` ...
""",
    ),
    _rule(
        "P309",
        "output-mode-unforced",
        W,
        "the local server takes the template's output mode without enforcing it",
        """
Ollama documents `tool_choice` as unsupported: the request says the output tool is required, the model
may still answer in prose, and each such answer costs a re-ask. `mode: native` is decoded under a
grammar built from the schema there, so the answer is valid JSON of the schema by construction.

    # atomtask check --model ollama:llama3.2 --base-url http://127.0.0.1:11434/v1
    output_format: {type: json, schema: Contact}   # P309 ... Ollama does not enforce `tool_choice` ...
""",
    ),
]

RULES: dict[str, Rule] = {rule.code: rule for rule in _ALL}


def matches(code: str, patterns: Iterable[str]) -> bool:
    """Whether `code` is selected by any of `patterns` (a code, or a prefix such as `W2` or `P`)."""
    return any(code.startswith(pattern.upper()) for pattern in patterns)
