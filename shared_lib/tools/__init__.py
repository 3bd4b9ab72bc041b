"""The brain's world: the tool registry and its fixed-logic handlers."""
