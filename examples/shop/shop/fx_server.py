"""A currency-conversion MCP server (the `mcp` package's `MCPServer`), over stdio or streamable HTTP.

python -m shop.fx_server                 # stdio, as `{mcp: {command: python, args: [-m, shop.fx_server]}}` starts it
python -m shop.fx_server --http 8765     # streamable HTTP on 127.0.0.1:8765/mcp
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

# Fixed rates, so that the examples and their tests give the same answer every time.
RATES_TO_EUR = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17, "CHF": 1.05}

server = MCPServer("fx", instructions="Converts amounts between currencies at fixed rates.")


@server.tool()
def convert(amount: float, from_currency: str, to_currency: str) -> float:
    """Convert an amount of money from one currency to another (EUR, USD, GBP, CHF), rounded to cents."""
    source, target = from_currency.upper(), to_currency.upper()
    for code in (source, target):
        if code not in RATES_TO_EUR:
            # A `ToolError`'s message reaches the model (another exception's stays in the server's log).
            raise ToolError(f"Unknown currency {code!r}; known: {', '.join(sorted(RATES_TO_EUR))}.")
    return round(amount * RATES_TO_EUR[source] / RATES_TO_EUR[target], 2)


def main(argv: list[str]) -> None:
    if len(argv) == 2 and argv[0] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(argv[1]))
    else:
        server.run()


if __name__ == "__main__":
    main(sys.argv[1:])
