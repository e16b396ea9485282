"""Modules, nodes and the `Spider` facade they compile from."""

from __future__ import annotations

from ._context import Ctx, Seeds
from ._module import Module, Node, SpiderModule
from ._spider import Spider
from ._task import Task

__all__ = ("Ctx", "Module", "Node", "Seeds", "Spider", "SpiderModule", "Task")
