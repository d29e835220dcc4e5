"""A template's tools, checked at registration: each mistake a `ToolDeclarationError` with its code and place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from atomtask import TaskSystem, Template, TemplateError, ToolDeclarationError
from pydantic import ValidationError

FUNCS = "tests.handlers.tool_funcs"


def _register(*tools: Any, importable: tuple[str, ...] = ("tests",), **more: Any) -> TaskSystem:
    system = TaskSystem(model="test", importable=importable)
    system.register(Template(name="quote", instructions="Quote.", tools=list(tools), **more))
    return system


@pytest.mark.parametrize(
    ("tools", "code", "says"),
    [
        ([f"{FUNCS}:lookup_prize"], "E130", "Did you mean 'lookup_price'?"),
        (["tests.handlers.no_such_module:f"], "E130", "Cannot import module 'tests.handlers.no_such_module'"),
        ([f"{FUNCS}:NOT_A_FUNCTION"], "E130", "not callable"),
        ([f"{FUNCS}:untyped"], "E131", "Parameter 'product' of tool"),
        ([f"{FUNCS}:varargs"], "E131", "`*products`"),
        ([f"{FUNCS}:takes_opaque"], "E131", "does not make a JSON Schema"),
        ([{"function": f"{FUNCS}:lookup_price", "allow_hosts": ["x"]}], "E131", "takes no options (allow_hosts)"),
        ([{"function": "atomtask.tools:http_get"}], "E131", "missing 1 required positional argument: 'allow_hosts'"),
        ([f"{FUNCS}:lookup_price", {"function": f"{FUNCS}:stock", "name": "lookup_price"}], "E132", "used twice"),
        ([f"{FUNCS}:final_result"], "E132", "pydantic-ai's output tool"),
        (
            [{"mcp": {"command": "a"}, "prefix": "fx"}, {"mcp": {"command": "b"}, "prefix": "fx"}],
            "E132",
            "MCP prefix 'fx' is used twice",
        ),
        ([{"mcp": {"command": "a"}}, {"mcp": {"url": "http://127.0.0.1:1/mcp"}}], "E132", "without a `prefix`"),
    ],
)
def test_a_tool_that_cannot_work_is_refused_at_registration(tools: list[Any], code: str, says: str) -> None:
    with pytest.raises(ToolDeclarationError) as caught:
        _register(*tools)
    assert code == caught.value.code
    assert says in caught.value.message
    assert isinstance(caught.value, TemplateError)


def test_a_module_outside_the_importable_packages_is_refused_before_it_is_imported() -> None:
    with pytest.raises(ToolDeclarationError) as caught:
        _register("os:system", importable=())
    assert "E130" == caught.value.code
    assert "--allow-import os" in caught.value.message and "ATOMTASK_IMPORTABLE=os" in caught.value.message


def test_atomtask_importable_allows_a_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATOMTASK_IMPORTABLE", "json, tests")
    system = _register(f"{FUNCS}:lookup_price", importable=())
    compiled = system.templates.compiled("quote")
    assert compiled.tools is not None and ("lookup_price",) == compiled.tools.names


def test_the_built_in_tools_are_always_importable() -> None:
    system = _register({"function": "atomtask.tools:read_text", "root": "."}, importable=())
    compiled = system.templates.compiled("quote")
    assert compiled.tools is not None and ("read_text",) == compiled.tools.names


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"mcp": {"command": "python", "argz": []}}, "argz"),
        ({"mcp": {"command": "python", "url": "http://x/mcp"}}, "not both or neither"),
        ({"mcp": {}}, "not both or neither"),
        ({"mcp": {"url": "ftp://x"}}, "must start with http:// or https://"),
        ({"mcp": {"url": "http://x/mcp", "args": ["-v"]}}, "apply to a `command`"),
        ({"mcp": {"command": "x"}, "prefix": "1fx"}, "MCP prefix '1fx'"),
        ({"fn": "x:y"}, "a tool entry is"),
        ("no_colon", "malformed"),
        (3, "a tool entry is"),
    ],
)
def test_a_malformed_entry_is_a_validation_error_of_the_template(entry: Any, says: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Template(name="quote", instructions="Quote.", tools=[entry])
    assert says in str(caught.value)


def test_tool_calls_is_a_positive_int() -> None:
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        Template(name="quote", instructions="Quote.", tool_calls=0)


def test_yaml_tools_are_located_and_their_mistakes_point_at_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "quote.yaml"
    path.write_text(
        f"name: quote\ninstructions: Quote.\ntools:\n  - {FUNCS}:lookup_price\n  - {{function: {FUNCS}:untyped}}\n",
        encoding="utf-8",
    )
    system = TaskSystem(model="test", importable=["tests"])
    with pytest.raises(ToolDeclarationError) as caught:
        system.load(path)
    assert "E131" == caught.value.code
    assert caught.value.location is not None and (5, 5) == (caught.value.location.line, caught.value.location.column)


def test_an_unknown_mcp_key_in_yaml_lists_the_valid_ones(tmp_path: Path) -> None:
    path = tmp_path / "quote.yaml"
    path.write_text(
        "name: quote\ninstructions: Quote.\ntools:\n  - {mcp: {command: python, argz: [x]}, prefix: fx}\n",
        encoding="utf-8",
    )
    with pytest.raises(TemplateError) as caught:
        TaskSystem(model="test").load(path)
    assert "`tools.0.mcp.argz`: unknown key; valid keys: command, args, env, cwd, url, headers" in caught.value.message
    assert caught.value.location is not None and 4 == caught.value.location.line


def test_defatom_declares_tools_like_yaml(tmp_path: Path) -> None:
    path = tmp_path / "quote.sexp"
    path.write_text(
        "(defatom quote_price\n"
        '  (instructions "Quote.")\n'
        f'  (tools "{FUNCS}:lookup_price"\n'
        f'         ((function "{FUNCS}:stock") (name "units"))\n'
        '         ((mcp ((command "python") (args ("-m" "fx")) (env ((LANG "C"))))) (prefix "fx")))\n'
        "  (tool_calls 4))\n",
        encoding="utf-8",
    )
    system = TaskSystem(model="test", importable=["tests"])
    system.load(path)
    template = system.templates.get("quote_price")
    assert 4 == template.tool_calls
    yaml_like = Template(
        name="quote_price",
        instructions="Quote.",
        tools=[
            f"{FUNCS}:lookup_price",
            {"function": f"{FUNCS}:stock", "name": "units"},
            {"mcp": {"command": "python", "args": ["-m", "fx"], "env": {"LANG": "C"}}, "prefix": "fx"},
        ],
        tool_calls=4,
    )
    assert yaml_like.tools == template.tools
    compiled = system.templates.compiled("quote_price")
    assert compiled.tools is not None and ("lookup_price", "units") == compiled.tools.names
    location = template.location_of("tools.1")
    assert location is not None and 4 == location.line


def test_a_pydantic_ai_tool_object_is_accepted_as_it_is() -> None:
    from pydantic_ai import Tool

    from tests.handlers.tool_funcs import lookup_price

    system = _register(Tool(lookup_price, name="price", description="Prices."))
    compiled = system.templates.compiled("quote")
    assert compiled.tools is not None and ("price",) == compiled.tools.names


def test_a_pydantic_ai_tool_cannot_be_renamed_in_the_declaration() -> None:
    from pydantic_ai import Tool

    from tests.handlers.tool_funcs import lookup_price

    with pytest.raises(ToolDeclarationError) as caught:
        _register({"function": Tool(lookup_price, name="price"), "name": "other"})
    assert "E131" == caught.value.code
    assert "is a pydantic-ai `Tool` named 'price'; give it its name where it is made" in caught.value.message
