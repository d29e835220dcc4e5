"""A small shop for atomtask's examples: a price list (a tool), orders (a code step), a currency MCP server."""
