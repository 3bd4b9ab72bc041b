"""A fake of ChatWork's task REST API that records every call, with injectable 429/5xx.

In-process: ``with FakeChatWorkServer() as fake: env = fake.env()``; from a shell:
``python -m infra.fake_chatwork --port N``. See ``infra.fake_chatwork.server``. (The
channel fake, ``infra.fake_channels``, imitates ChatWork's *message* API.)
"""

from infra.fake_chatwork.server import ChatWorkTasksApp, FakeChatWorkServer, Fault

__all__ = ["ChatWorkTasksApp", "FakeChatWorkServer", "Fault"]
