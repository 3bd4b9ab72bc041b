"""The debounce (seed 001 §7.3): a burst of messages from one person in a room becomes one turn.
``state.py`` is the buffer (``debounce_entries``, texts under the vault key): the ingress appends
a message, the context layer settles the turn (absorbed into a later one, or the last of the
burst, which carries every text). ``steps_ingress.py`` is what the ingress holds a message in
(the runtime's ``hooks.inbound_buffer``).
"""
