"""Skills (seed 001 §23): declared, versioned, reviewed units an organisation adds to its tools.

``state/`` is the declared unit and the sandbox, kept together: ``spec`` (the declared unit),
``config`` (the sandbox's limits, ``config/skills.json``), ``sandbox`` and ``isolation`` (+ the
stdlib-only processes ``sandbox_init``, ``sandbox_child``, ``sandbox_seccomp``: untrusted code in
a separate, limited process). ``store.py`` is the versions, tests, approvals and rollbacks
(``store_examples.py``: a version's examples run in the sandbox); ``handlers.py`` the
``propose_skill`` tool, ``handlers_active.py`` an organisation's approved versions as tool entries
(the runtime's ``registry_of``); ``cli.py`` is ``charter skills``. The JSON Schema rules tools and
skills share are the tools' (``shared_lib.tools.input_schema``).
"""
