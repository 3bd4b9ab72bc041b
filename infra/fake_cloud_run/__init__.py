"""A fake of the Cloud Run Admin API v2 (services, revisions, traffic), in one local server.

In-process: ``with FakeCloudRun(token="t") as fake: fake.add_service(...)``; from a shell:
``python -m infra.fake_cloud_run --port N [--seed FILE.json]``. See ``infra.fake_cloud_run.server``.
"""

from infra.fake_cloud_run.server import FakeCloudRun

__all__ = ["FakeCloudRun"]
