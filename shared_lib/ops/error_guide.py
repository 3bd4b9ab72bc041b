"""What an error code means to an operator, and the runbook line for it (the dashboard's errors).

Every code of the seed 000 §6.7.3 catalogue (``shared_lib.errors.CATALOGUE``) has a meaning
and one runbook line here (a static test holds the two in step); a tool result's own error
codes (``ToolResult.error_code``) share the catalogue's where they are the same failure.
``explain(code)`` adds the catalogue's layer, severity and whether it is recoverable; a code
this guide does not know is shown as such, never hidden.

>>> explain("rate_limit")["runbook"].startswith("Wait")
True
"""

from __future__ import annotations

from typing import Any

from shared_lib.errors import CATALOGUE

# code -> (meaning, runbook line)
GUIDE: dict[str, tuple[str, str]] = {
    "db_connection_error": (
        "The context layer could not reach Firestore.",
        "Check Firestore status and the service account's datastore role; the turn is redelivered after 30 s.",
    ),
    "memory_access_error": (
        "Memory could not be read; the turn went on without it.",
        "Check the memory index with `charter memory search --org ORG`; rebuild it with `charter memory reindex --org ORG`.",
    ),
    "api_timeout": (
        "The LLM did not answer within its timeout.",
        "Look at the LLM latency chart; if p95 is over 10 s, pause the brain (Controls → Pause) until it recovers.",
    ),
    "rate_limit": (
        "The LLM provider refused the call for quota (429).",
        "Wait 60 s; if it repeats, raise the provider quota or lower the canary percentage in the flags.",
    ),
    "parse_error": (
        "The LLM answered, but not with a valid proposal; the person was asked to clarify.",
        "Open the turn's LLM call and compare the response with the proposal schema; a new model may need the prompt fixed.",
    ),
    "invalid_tool_call": (
        "The LLM proposed a tool call that failed validation; it was asked again with guidance.",
        "Nothing to do for one turn; if frequent, check the tool's schema against the model's calls.",
    ),
    "llm_unavailable": (
        "The LLM provider answered 5xx or overloaded (529).",
        "Check the provider's status and `charter peers list`; pause the brain (Controls → Pause) if it lasts.",
    ),
    "constitution_violation": (
        "The guardian stopped a proposal that breaks the constitution.",
        "Read the violation in the trail; run `charter audit constitution` for the day and tell the owner the article.",
    ),
    "ceo_teaching_check_error": (
        "The CEO-teaching check could not run; the turn went on with caution.",
        "Check that the organisation's teachings load (`charter memory list --org ORG --kind teaching`).",
    ),
    "permission_denied": (
        "The person's level is below what the action needs.",
        "Nothing to fix unless the level is wrong: check the person's level in the directory.",
    ),
    "access_control_error": (
        "The authorization check itself failed (directory or policy unreadable).",
        "Check the directory sync and the policy file version; the action was refused, not run.",
    ),
    "handler_not_found": (
        "The proposed tool has no handler in this deployment.",
        "Check the feature manifest and the deployed revision; a tool was offered that is not wired.",
    ),
    "execution_error": (
        "The tool's handler failed while running.",
        "Open the execution result; retry is automatic after 5 s. Check the handler's logs with the turn id.",
    ),
    "external_api_error": (
        "An external service (ChatWork, calendar, …) refused or failed.",
        "Check the service's status and the organisation's credential; retried after 30 s.",
    ),
    "validation_error": (
        "A parameter failed the tool's fixed checks (a date, an id, a length).",
        "Nothing to fix for one turn; if frequent, the prompt or the tool's description misleads the model.",
    ),
    "tool_timeout": (
        "The tool did not finish within its budget.",
        "Check the external service's latency; retried after 5 s.",
    ),
    "send_error": (
        "The reply could not be delivered to the channel.",
        "Check the channel token and the provider's status; the reply is in the record and can be resent.",
    ),
    "layer_failed": (
        "A layer failed for good; the message went to the dead-letter topic.",
        "Look at the layer's logs for the turn id (`charter turns show TURN`), fix the cause; the alert names the layer.",
    ),
    "turn_backlog": (
        "The turn waited so long between hops that its budget was spent before the brain started.",
        "Look at the turn's waterfall for the queueing; check the layers' minimum instances and cold starts.",
    ),
}


def explain(code: str) -> dict[str, Any]:
    """The meaning, runbook line and catalogue facts of ``code`` (``known`` false when unlisted)."""
    entry = CATALOGUE.get(code)
    meaning, runbook = GUIDE.get(code, ("", ""))
    return {
        "code": code,
        "known": code in GUIDE,
        "meaning": meaning or "An error this dashboard has no description for.",
        "runbook": runbook or "Search the logs for the turn id and this code.",
        "severity": entry.severity if entry else None,
        "layer": entry.layer if entry else None,
        "recoverable": entry.recoverable if entry else None,
    }
