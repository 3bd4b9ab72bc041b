"""Pub/Sub push entrypoint of the background `memory` layer (logic lives in shared_lib)."""

import functions_framework

from shared_lib.wiring.push import run_target


@functions_framework.cloud_event
def memory(cloud_event) -> None:
    run_target("memory", cloud_event)
