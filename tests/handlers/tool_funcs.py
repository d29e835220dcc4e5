"""Functions the tool tests give templates as tools (imported by reference: `tests.handlers.tool_funcs:...`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic_ai import ModelRetry

PRICES = {"grinder": 89.5, "descaler": 12.0}
CALLS: list[tuple[str, Any]] = []


def lookup_price(product: str) -> float:
    """Look up a product's list price in USD."""
    CALLS.append(("lookup_price", product))
    if product not in PRICES:
        raise ModelRetry(f"No product {product!r}; known: {', '.join(sorted(PRICES))}.")
    return PRICES[product]


async def stock(product: str, warehouse: int = 1) -> dict[str, Any]:
    """How many units of a product a warehouse holds."""
    CALLS.append(("stock", product))
    return {"product": product, "warehouse": warehouse, "units": 3}


def broken(product: str) -> float:
    """A tool with a bug in it."""
    CALLS.append(("broken", product))
    raise KeyError(product)


def untyped(product):  # type: ignore[no-untyped-def]  # the mistake under test
    return 1


def varargs(*products: str) -> int:
    return len(products)


def final_result(x: int) -> int:
    return x


class Opaque:
    """No schema can describe it."""


def takes_opaque(value: Opaque) -> int:
    return 1


class Quote(BaseModel):
    product: str
    price_eur: float


NOT_A_FUNCTION = 3
