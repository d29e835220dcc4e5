"""Reading S-expression source into nodes that know their file, line and column.

The grammar is lark's (LALR, basic lexer): lists `( ... )`, `'form` for `(quote form)`, strings in
double quotes (escapes `\\ \" \n \t \r`), integers and floats, `true`/`false`/`nil`, symbols
(any other run of characters without whitespace, parentheses, quotes or `;`), and `;` comments.

The parser is a table-driven LALR parser and the nodes are built as it reduces, so no input, however
deeply nested, recurses in Python; nesting deeper than `MAX_DEPTH` is rejected with its location,
which keeps every later walk over the nodes (evaluation, quoting) within a small, fixed depth.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, TypeAlias, cast

import attrs
from atomtask.errors import SexpSyntaxError, SourceLocation
from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

__all__ = ["MAX_DEPTH", "Literal", "Node", "SList", "Symbol", "read"]

#: The deepest nesting of lists (and quotes) a source may have.
MAX_DEPTH = 64

_GRAMMAR = r"""
start: _form*
_form: group | quoted | atom
group: LPAR _form* RPAR
quoted: QUOTE _form
atom: STRING | NUMBER | SYMBOL

LPAR: "("
RPAR: ")"
QUOTE: "'"
STRING: /"(?:[^"\\]|\\.)*"/s
NUMBER.2: /[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?![^\s()'";])/
SYMBOL: /[^\s()'";]+/
COMMENT: /;[^\n]*/

%ignore COMMENT
%ignore /\s+/
"""

_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}
_ESCAPE_RE = re.compile(r"\\(.)", re.DOTALL)
_INT_RE = re.compile(r"[+-]?\d+")
_WORDS: dict[str, bool | None] = {"true": True, "false": False, "nil": None}

_file: ContextVar[str] = ContextVar("sexp_file", default="<string>")


@attrs.frozen(kw_only=True)
class Symbol:
    """A name: evaluated by looking it up, or a special form's keyword."""

    name: str
    location: SourceLocation

    def __str__(self) -> str:
        return self.name


@attrs.frozen(kw_only=True)
class Literal:
    """A string, number, `true`, `false` or `nil`; it evaluates to itself."""

    value: str | int | float | bool | None
    location: SourceLocation
    # For strings: the source between the quotes (escapes not yet decoded) and where it starts,
    # to point at a character inside the text.
    raw: str | None = None
    text_start: SourceLocation | None = None


@attrs.frozen(kw_only=True)
class SList:
    """A parenthesised list of forms (`'x` reads as the list `(quote x)`)."""

    items: tuple[Node, ...]
    location: SourceLocation
    depth: int = 1

    @property
    def head(self) -> str | None:
        """The name of the first item when it is a symbol (the form's keyword or callee)."""
        first = self.items[0] if self.items else None
        return first.name if isinstance(first, Symbol) else None


Node: TypeAlias = Symbol | Literal | SList


def read(text: str, file: str = "<string>") -> list[Node]:
    """Read every top-level form of `text`; raises `SexpSyntaxError` with the line and column."""
    context = _file.set(file)
    try:
        interactive = _parser().parse_interactive(text)
        # One pass: each token is checked (stray or too deeply nested parentheses) before the
        # parser takes it, for messages more precise than a generic "unexpected token".
        open_parens: list[Token] = []
        last: Token | None = None
        for token in _tokens(interactive.iter_parse(), text, file):
            if token.type == "LPAR":
                open_parens.append(token)
                if len(open_parens) > MAX_DEPTH:
                    raise _too_deep(_token_loc(token))
            elif token.type == "RPAR":
                if not open_parens:
                    raise SexpSyntaxError(
                        "Unexpected `)`: no `(` is open here. Remove it or add the missing `(`.",
                        location=_token_loc(token),
                    )
                open_parens.pop()
            last = token
        if open_parens:
            count = len(open_parens)
            more = f" ({count} `(` are unclosed in all)" if count > 1 else ""
            raise SexpSyntaxError(
                f"This `(` is never closed{more}: the input ended first. Add the missing `)`.",
                location=_token_loc(open_parens[0]),
            )
        # lark leaves `feed_eof` unannotated; it returns what the `start` callback built.
        feed_eof: Any = interactive.feed_eof
        return cast("list[Node]", feed_eof(last))
    except UnexpectedInput as exc:
        raise _syntax_error(exc, file) from None
    finally:
        _file.reset(context)


@functools.cache
def _parser() -> Lark:
    return Lark(_GRAMMAR, parser="lalr", lexer="basic", transformer=_Build(), maybe_placeholders=False)


def _loc(line: int, column: int) -> SourceLocation:
    return SourceLocation(file=_file.get(), line=line, column=column)


def _token_loc(token: Token) -> SourceLocation:
    return _loc(token.line or 0, token.column or 0)


class _Build(Transformer[Token, Any]):
    """Builds nodes as the LALR parser reduces (no tree, no recursion)."""

    def start(self, items: list[Node]) -> list[Node]:
        return items

    def group(self, items: list[Any]) -> SList:
        open_paren: Token = items[0]
        return _slist(tuple(items[1:-1]), _token_loc(open_paren))

    def quoted(self, items: list[Any]) -> SList:
        quote: Token = items[0]
        location = _token_loc(quote)
        return _slist((Symbol(name="quote", location=location), items[1]), location)

    def atom(self, items: list[Token]) -> Node:
        token = items[0]
        location = _token_loc(token)
        if token.type == "STRING":
            start = _loc(location.line or 0, (location.column or 0) + 1)
            text = str(token)
            return Literal(value=_unescape(text, token), location=location, raw=text[1:-1], text_start=start)
        if token.type == "NUMBER":
            return Literal(value=_number(str(token), location), location=location)
        if str(token) in _WORDS:
            return Literal(value=_WORDS[str(token)], location=location)
        return Symbol(name=str(token), location=location)


def _slist(items: tuple[Node, ...], location: SourceLocation) -> SList:
    depth = 1 + max((item.depth for item in items if isinstance(item, SList)), default=0)
    if depth > MAX_DEPTH:
        raise _too_deep(location)
    return SList(items=items, location=location, depth=depth)


def _too_deep(location: SourceLocation) -> SexpSyntaxError:
    return SexpSyntaxError(
        f"Forms nest more than {MAX_DEPTH} levels deep here. Flatten the expression, e.g. bind "
        "intermediate values with `let`.",
        location=location,
    )


def _unescape(raw: str, token: Token) -> str:
    body = raw[1:-1]

    def replace(match: re.Match[str]) -> str:
        char = match.group(1)
        if char in _ESCAPES:
            return _ESCAPES[char]
        offset = match.start() + 1  # +1 for the opening quote
        before = raw[:offset]
        line = (token.line or 0) + before.count("\n")
        column = offset - before.rfind("\n") if "\n" in before else (token.column or 0) + offset
        raise SexpSyntaxError(
            f'Unknown escape `\\{char}` in a string. Valid escapes: `\\\\`, `\\"`, `\\n`, `\\t`, `\\r`; '
            "write `\\\\` for a backslash.",
            location=_loc(line, column),
        )

    return _ESCAPE_RE.sub(replace, body)


def _number(text: str, location: SourceLocation) -> int | float:
    try:
        value: int | float = int(text) if _INT_RE.fullmatch(text) else float(text)
    except ValueError:  # more digits than Python converts
        value = math.inf
    if isinstance(value, float) and not math.isfinite(value):
        raise SexpSyntaxError(f"Number {_clip(text)} is out of range; write it as a string.", location=location)
    return value


def _tokens(tokens: Iterator[Token], text: str, file: str) -> Iterator[Token]:
    try:
        yield from tokens
    except UnexpectedCharacters as exc:
        location = SourceLocation(file=file, line=exc.line, column=exc.column)
        position: int | None = exc.pos_in_stream
        if position is not None and text[position : position + 1] == '"':
            raise SexpSyntaxError(
                'This string is never closed: add the closing `"` (write `\\"` for a quote inside it).',
                location=location,
            ) from None
        raise SexpSyntaxError(f"Unexpected character {exc.char!r}.", location=location) from None


def _syntax_error(exc: UnexpectedInput, file: str) -> SexpSyntaxError:
    line: int | None = getattr(exc, "line", None)
    location = SourceLocation(file=file, line=line, column=exc.column) if line is not None and line > 0 else None
    if isinstance(exc, UnexpectedToken):
        quote_before = exc.state is not None and any(
            getattr(t, "type", None) == "QUOTE" for t in exc.state.value_stack[-1:]
        )
        found = "the end of the input" if exc.token.type == "$END" else f"`{exc.token}`"
        if quote_before:
            return SexpSyntaxError(f"`'` must be followed by a form to quote, found {found}.", location=location)
        return SexpSyntaxError(f"Unexpected {found}.", location=location)
    return SexpSyntaxError(f"Cannot read this input: {exc}.", location=location)


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
