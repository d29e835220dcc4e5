"""The shop's orders: the code step of `order_reply.yaml` (`call: shop.orders:fetch_order`)."""

from __future__ import annotations

from pydantic import BaseModel


class Line(BaseModel):
    product: str
    quantity: int
    unit_price_usd: float


class Order(BaseModel):
    order_id: str
    status: str
    lines: list[Line]
    total_usd: float


# A real shop would ask its database or its order service here (over HTTP, say).
_ORDERS = {
    "A-1001": ("shipped", [("grinder", 1, 89.5), ("descaler", 2, 12.0)]),
    "A-1002": ("processing", [("espresso machine", 1, 249.0)]),
}


class OrderNotFoundError(LookupError):
    """No order has that id."""


def fetch_order(order_id: str) -> Order:
    """The order `order_id`, with its lines and its total in US dollars."""
    if order_id not in _ORDERS:
        raise OrderNotFoundError(f"No order {order_id!r}; known orders: {', '.join(sorted(_ORDERS))}.")
    status, lines = _ORDERS[order_id]
    parts = [Line(product=p, quantity=q, unit_price_usd=u) for p, q, u in lines]
    return Order(
        order_id=order_id,
        status=status,
        lines=parts,
        total_usd=round(sum(line.quantity * line.unit_price_usd for line in parts), 2),
    )
