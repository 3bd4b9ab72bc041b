"""Pub/Sub push entrypoint of the `brain_shadow` layer (logic lives in shared_lib)."""

import functions_framework

from shared_lib.wiring.push import run_target


@functions_framework.cloud_event
def brain_shadow(cloud_event) -> None:
    run_target("brain_shadow", cloud_event)
