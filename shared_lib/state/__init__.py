"""Session state and pending confirmations (seed 000 §5.1.5–5.1.7), changed only in transactions.

session.py       the session document: modes, expiry, pending action (store transactions)
answers.py       reading an answer: approve / deny / other, approval id, urgency
gate.py          the confirmation message (seed 004 §8 five points)

The entry points the brain and responder layers call (ask, answer, after the reply) take the
runtime, so they live with the layers: ``shared_lib.features.approvals.steps``.
"""
