"""The agent state (seed 004 §6): a conversation's goal, step and what it has done, changed only by
the transition table (``config/agent_state.json``). ``state.py`` is the model and its rules;
``store.py`` reads it for the prompt and records a finished turn into it (``agent_states``).
"""
