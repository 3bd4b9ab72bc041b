"""Rollout of a new brain: shadow comparisons, the shadow report, the rollback guard and
runtime flag overrides (``charter flags ...``, ``charter shadow ...``, ``charter guard ...``);
rollout of new revisions: smoke turns and the revision rollback (``charter rollout ...``).

Public surface::

    shared_lib.rollout.overrides   write_override, clear_override, read_override, audit_entries
    shared_lib.rollout.comparison  compare, store_comparison, on_shadow_candidate, on_served_turn
    shared_lib.rollout.report      build_report, load_comparisons, PromotionCriteria, parse_duration
    shared_lib.rollout.guard       RollbackGuard, guard_status
    shared_lib.rollout.smoke       sign, is_smoke (the signed smoke header of a webhook)
    shared_lib.rollout.revisions   CloudRunAdmin, check_after_shift, rollback_plan, apply_plan
"""

from __future__ import annotations

from shared_lib.rollout.overrides import clear_override, read_override, write_override

__all__ = ["clear_override", "read_override", "write_override"]
