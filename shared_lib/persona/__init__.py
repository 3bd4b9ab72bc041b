"""The persona: its message catalogue (``catalogue``), its fixed identity core (``core``) and the
organisation's learnt extension (``ext``)."""
