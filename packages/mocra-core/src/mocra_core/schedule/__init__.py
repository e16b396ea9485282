"""Cron scheduling: `CronSchedule` (when) and `CronRunner` (fires a callback on the leader)."""

from __future__ import annotations

from ._cron import CronRunner, CronSchedule

__all__ = ("CronRunner", "CronSchedule")

for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
