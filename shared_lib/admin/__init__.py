"""The admin service: the operator dashboard (``app``), its JSON API (``api``), the operator
token (``auth``) and inline SVG charts (``charts``). Page, script and styles are the package
files in ``static/``."""
