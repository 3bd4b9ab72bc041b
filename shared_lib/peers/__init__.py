"""LLM peers (seed 001 §6): several backends behind the one ``LLM`` port.

==============  ==============================================================================
``config``      ``PeerSpec`` / ``PeersConfig``: the peers in priority order and the routing per
                purpose, as data (``config/peers.json``, or ``CHARTER_PEERS``)
``health``      ``HealthBoard``: each peer's last health in the store (``peer_health``), cached,
                probed in the background every interval by one instance
``router``      ``PeerRouter``: the runtime's ``LLM``; per purpose, the routed peers in order,
                skipping the unhealthy, the busy and (local-only turns) the cloud ones, falling
                back on a failed call with the reason recorded
==============  ==============================================================================

Floor 2 (adapters and data): it knows the ports and the store, never a domain module; the
composition root builds the peers' adapters and hands them in.
"""
