"""Generations of a job's modules: deploy new code to a running job, activate it by CAS, drain, roll back.

Each module of a job has generations: a number and the `code_hash` of its code. The job's coordination
store keeps them (`JobGenerations`); `register` records a starting worker's code, `activate` switches the
active generation of modules in one compare-and-set (two concurrent deploys: one wins, the other gets
`DeployConflict`), and the generation active before drains, then retires.
"""

from __future__ import annotations

from ._code import UNKNOWN_HASH, code_hash
from ._errors import DeployConflict, DeployRefused
from ._record import Generation, GenerationState, JobGenerations, ModuleGenerations
from ._store import GENERATIONS, activate, read_generations, recorded_names, register

__all__ = (
    "GENERATIONS",
    "UNKNOWN_HASH",
    "DeployConflict",
    "DeployRefused",
    "Generation",
    "GenerationState",
    "JobGenerations",
    "ModuleGenerations",
    "activate",
    "code_hash",
    "read_generations",
    "recorded_names",
    "register",
)

for _name in __all__:
    _obj = globals().get(_name)
    if getattr(_obj, "__module__", "").startswith(__name__ + "."):
        _obj.__module__ = __name__
del _name, _obj
