"""Per-paper artifacts (figures, tables, claims) and the registry that lists them."""
