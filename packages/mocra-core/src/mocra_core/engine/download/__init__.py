"""The download stage: lease requests whose domain can start now, fetch them, hand responses on.

`DownloadStage` (`_stage.py`) prepares, fetches, retries or hands on; `DomainFeeder` and `DomainQueues` lease
without head-of-line blocking; `HopGuard` admits each redirect hop; `LoginManager` logs accounts in;
`Pace` holds the adaptive pace (autoscale, autothrottle).
"""

from __future__ import annotations

from ._hops import HopGuard
from ._login import LoginManager
from ._pace import Pace
from ._stage import DownloadStage, Politeness

__all__ = ("DownloadStage", "HopGuard", "LoginManager", "Pace", "Politeness")
