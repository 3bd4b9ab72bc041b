"""The ``Turn`` envelope and its records: what one message becomes as it moves through the
layers (``envelope``), the inbound message it starts from (``inbound``), the LLM's proposal
(``proposal``), the deciding layers' verdicts (``decisions``), each loop step (``steps``), the
agent state's record (``agent_record``), the turn's processing budget (``budgets``) and which
turn the current code works for (``callctx``)."""
