"""The proposing half: the LLM brain under its constitution, and the legacy keyword brain."""
