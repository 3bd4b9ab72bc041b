"""The composition root (``composition``: settings to a runtime and its layers) and the glue
between functions-framework and the layers (``push``)."""
