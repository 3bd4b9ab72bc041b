"""Rollout of a new brain: shadow comparisons, the shadow report, the promotion gates, the
rollback guard and runtime flag overrides (``charter flags ...``, ``charter shadow ...``,
``charter gate ...``, ``charter guard ...``); rollout of new revisions: smoke turns and the
revision rollback (``charter rollout ...``).

Public surface::

    shared_lib.rollout.overrides   write_override, write_org_override, clear_override, read_override,
                                   audit_entries
    shared_lib.rollout.comparison  compare, store_comparison, on_shadow_candidate, on_served_turn
    shared_lib.rollout.report      build_report, load_comparisons, PromotionCriteria, parse_duration
    shared_lib.rollout.guard       RollbackGuard, guard_status
    shared_lib.rollout.causes      VERDICT_CAUSES, cause_of, record_signals (who caused a verdict)
    shared_lib.rollout.guard_window  window_status, decide (the guard's window per organisation)
    shared_lib.rollout.gates       shadow_gate, canary_gate, CanaryCriteria, promotion_step
    shared_lib.rollout.smoke       sign, is_smoke (the signed smoke header of a webhook)
    shared_lib.rollout.revisions   CloudRunAdmin, check_after_shift, rollback_plan, apply_plan
"""

from __future__ import annotations

from shared_lib.rollout.overrides import clear_override, read_override, write_override

__all__ = ["clear_override", "read_override", "write_override"]
