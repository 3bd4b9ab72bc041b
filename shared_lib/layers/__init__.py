"""One module per layer; each exposes ``LAYER`` (a ``Layer``) over the ``Turn`` envelope."""
