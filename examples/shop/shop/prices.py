"""The shop's price list: the function tool of `quote_price.yaml`."""

from __future__ import annotations

from pydantic_ai import ModelRetry

PRICES_USD = {"espresso machine": 249.0, "grinder": 89.5, "descaler": 12.0}


def lookup_price(product: str) -> float:
    """Look up the list price of a product, in US dollars.

    Args:
        product: the product's name as the customer wrote it, e.g. "grinder".
    """
    key = product.strip().lower()
    if key not in PRICES_USD:
        # Sent back to the model, which may try another spelling: not a failure of the task.
        raise ModelRetry(f"No product {product!r}; the shop sells: {', '.join(sorted(PRICES_USD))}.")
    return PRICES_USD[key]
