"""The deciding half of the charter: guardian rules and the authorization gate.

config.py         the policy as data (``config/policy.json``), validated; ``load_policy_config``
reasons.py        the reason-code catalogue (action, priority, double confirmation)
effective.py      ``Policy``: configuration + registry + teachings, with its version
subject.py        what is judged, read once from a proposal
rules.py          the seven priorities of seed 000 §5.3.3b as ordered findings
consistency.py    priority 7: corrections, impossible values, dates
teachings.py      company teachings: prompt text and machine-checkable conditions
values.py         reading amounts, dates and recipient lists
guardian.py       ``evaluate``: first match wins; approvals re-checked
directory.py      the ``Directory`` port (store and in-memory peers)
authorization.py  ``authorize``: the Authorization Gate of seed 000 §6.4
simulator.py      the operators' simulator, ``cli.py`` its ``charter policy`` commands
"""
