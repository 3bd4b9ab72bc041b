"""Auto-approve (seed 002 §6.4, §10.2): grants that turn a confirmation into an allow, and the
instant OFF. ``store.py`` decides and keeps the grants (code decides, never the LLM);
``steps.py`` is the guardian's hook and the chat command; ``admin.py`` the dashboard's OFF.
"""
