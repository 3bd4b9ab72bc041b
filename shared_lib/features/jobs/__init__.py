"""Delegated jobs (seed 001 §15, 002 §4.4): a bounded task handed to a sub-agent, run as a turn
of its own. ``state.py`` is the job's status machine and documents (``shared_lib.tools.job_doc``);
``handlers.py`` the ``delegate_task`` tool, which writes a job ``queued``; ``steps.py`` its turn through the chain
and its report; ``cli.py`` ``charter jobs``; ``admin.py`` ``/api/jobs`` and the watchdog task.
"""
