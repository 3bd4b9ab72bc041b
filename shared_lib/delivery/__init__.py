"""How a turn moves between functions exactly once: the topics and subscriptions
(``topology``, over ``topology.json``) and the claims that make every stage idempotent
(``idempotency``)."""
