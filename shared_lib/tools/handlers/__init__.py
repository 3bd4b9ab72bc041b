"""Fixed-logic tool handlers, one module per area (tasks, goals, memory, organisation)."""
