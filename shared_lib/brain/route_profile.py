"""The route's profile in the brain (seed 003: a route selects what the brain works with).

``profile(turn)`` is the ``RouteProfile`` of the router's decision (``config/routing.json``
``profiles``), ``instructions(turn)`` its instructions (with the DELEGATE protocol's where the
channel fixed the input to CHAT); ``offered(registry, profile)`` is the registry the proposal call sees: only the
profile's tools, so only they are offered to the model, and a proposal naming any other is
refused by validation like an unknown tool (``invalid_tool_call``, then the one retry).

>>> from shared_lib.turn.envelope import RouteSection
>>> from shared_lib.tools.builtin import builtin_registry
>>> p = profile_of(RouteSection(route="ANALYZE", source="rules"))
>>> "chatwork_task_create" in offered(builtin_registry(), p), "knowledge_search" in offered(builtin_registry(), p)
(False, True)
"""

from __future__ import annotations

from shared_lib.routing import load_routing_config
from shared_lib.routing.config import RouteProfile
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.envelope import RouteSection, Turn


def profile_of(route: RouteSection) -> RouteProfile:
    """The profile of ``route`` (a route the configuration does not know reads as CHAT)."""
    return load_routing_config().profile(route.route)


def profile(turn: Turn) -> RouteProfile:
    return profile_of(turn.route)


def instructions(turn: Turn) -> str:
    """The route's instructions; on a channel fixed to CHAT, before the turn's one re-route, with
    the DELEGATE protocol's (``config/routing.json`` ``delegation``, seed 002 §2.6)."""
    own = profile(turn).instructions()
    if not turn.route.forced or turn.loop.reroute_used:
        return own
    protocol = load_routing_config().delegation.instructions()
    return "\n\n".join(x for x in (own, protocol) if x)


def offered(registry: ToolRegistry, route_profile: RouteProfile) -> ToolRegistry:
    """``registry`` itself for ``"all"``, else a registry of the profile's tools only."""
    if route_profile.tools == "all":
        return registry
    return ToolRegistry([spec for spec in registry if route_profile.offers(spec.name)])
