"""What the Observability layer keeps: decision records (``records``), the records of each loop
step (``step_records``) and structured, masked log lines (``logs``)."""
