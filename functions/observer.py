"""Pub/Sub push entrypoint of the `observer` layer (logic lives in shared_lib)."""

import functions_framework

from shared_lib.wiring.push import run_target


@functions_framework.cloud_event
def observer(cloud_event) -> None:
    run_target("observer", cloud_event)
