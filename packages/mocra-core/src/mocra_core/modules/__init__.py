"""Modules and nodes, and the `Spider` facade that compiles to a one-node module."""

from __future__ import annotations

from ._context import Ctx, Route, Seeds, TaskCtx
from ._module import SPIDER_NODE, CompiledModule, Module, compile_module
from ._node import Account, Login, Node
from ._seed_file import read_seed_urls
from ._session import LoginFailed, LoginSession
from ._spider import Spider
from ._starts import CronEntry, Start
from ._task import Task

__all__ = (
    "SPIDER_NODE",
    "Account",
    "CompiledModule",
    "CronEntry",
    "Ctx",
    "Login",
    "LoginFailed",
    "LoginSession",
    "Module",
    "Node",
    "Route",
    "Seeds",
    "Spider",
    "Start",
    "Task",
    "TaskCtx",
    "compile_module",
    "read_seed_urls",
)
