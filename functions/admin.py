"""HTTP entrypoint of the operator dashboard and scheduled tasks (logic in shared_lib.admin)."""

import flask
import functions_framework

from shared_lib.admin.app import handle


@functions_framework.http
def admin(request: flask.Request) -> object:
    return handle(request)
