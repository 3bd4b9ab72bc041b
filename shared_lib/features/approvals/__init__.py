"""Approvals (seed 000 §5.1.5–5.1.7, seed 002 §6): confirmations asked, answered and expired, and
approval jobs for what needs another person's approval.

``steps.py`` (ask, answer, after the reply) and ``steps_answers.py`` (which job an answer decides,
who may give it) run beside the layers; ``store.py`` is the ``approval_jobs`` documents;
``cli.py`` is ``charter approvals``; ``manifest.py`` declares the room.
"""
