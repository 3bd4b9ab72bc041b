"""Skills (seed 001 §23): declared, versioned, reviewed units an organisation adds to its tools.

``spec`` (the declared unit), ``input_schema`` (the JSON Schema rules tools and skills share),
``config`` (the sandbox's limits, ``config/skills.json``), ``sandbox`` (+ ``sandbox_child``: untrusted
code in a separate, limited process), ``store`` (versions, tests, approvals, rollbacks),
``examples`` (a version's examples run in the sandbox).
"""
