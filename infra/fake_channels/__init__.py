"""Fake reply APIs of ChatWork, LINE, Slack and the HTTP channel, in one local server.

In-process: ``with FakeChannelServer() as fake: env = fake.env()``; from a shell:
``python -m infra.fake_channels --port N``. See ``infra.fake_channels.server``.
"""

from infra.fake_channels.server import FakeChannelServer, Fault

__all__ = ["FakeChannelServer", "Fault"]
