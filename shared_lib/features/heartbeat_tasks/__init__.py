"""Heartbeat tasks (seed 001 §17: HEARTBEAT.md's periodic tasks): what people give the heartbeat
to do on a schedule (「毎週月曜9時に、今週の締め切りをチームに共有して」).

* ``state_schedule`` — the schedule as said, read into daily / weekly days / monthly form, and
  its next due time in Japan's time (fixed logic);
* ``store`` — the tasks and their runs; a due slot is taken once, in a transaction;
* ``handlers`` — ``schedule_heartbeat_task``, the tool that sets one from conversation;
* ``steps_tick`` — the tick runs each task come due as a turn of its creator;
* ``cli`` — ``charter heartbeat add|list|remove --org`` for operators.
"""
