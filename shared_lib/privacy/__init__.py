"""Personal data and secrets: masking before any LLM or log (``sanitizer``, over the folded text
of ``text_fold``, with the checks of ``sanitizer_checks``) and sealing what a user asks it to
keep (``sealing``)."""
