"""The generate stage: a module's tasks (seeds, cron, next nodes) become requests."""

from __future__ import annotations

from ._cron_claims import CronClaims
from ._seeding import all_seeded, check_modules, recorded_modules, seed_once, start_tasks
from ._stage import GenerateStage

__all__ = (
    "CronClaims",
    "GenerateStage",
    "all_seeded",
    "check_modules",
    "recorded_modules",
    "seed_once",
    "start_tasks",
)
