"""Fake OpenAI-compatible chat completions API for local runs and tests (see ``README.md``).

>>> from infra.fake_openai import FakeOpenAIServer
>>> with FakeOpenAIServer() as server:
...     server.requests
[]
"""

from infra.fake_openai.server import FakeOpenAIServer

__all__ = ["FakeOpenAIServer"]
