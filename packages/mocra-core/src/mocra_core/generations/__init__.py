"""Generations of a job's modules: deploy new code to a running job, activate it by CAS, drain, roll back.

Each module of a job has generations: a number and the `code_hash` of its code. The job's coordination
store keeps them (`JobGenerations`); `register` records a starting worker's code, `activate` switches the
active generation of modules in one compare-and-set (two concurrent deploys: one wins, the other gets
`DeployConflict`), and the generation active before drains, then retires. `deploy` prepares a file's
code in a fresh interpreter (a file that fails to import never activates), verifies it over recorded
responses if asked, and activates it; `activate_number` rolls back.
"""

from __future__ import annotations

from ._code import UNKNOWN_HASH, code_hash
from ._deploy import Deployed, activate_number, deploy, prepare
from ._errors import DeployConflict, DeployRefused
from ._record import Generation, GenerationState, JobGenerations, ModuleGenerations
from ._reload import load_file
from ._shapes import RecordedResponse
from ._store import GENERATIONS, activate, read_generations, recorded_names, register, retire
from ._watch import GenerationWatch, active_in_file

__all__ = (
    "GENERATIONS",
    "UNKNOWN_HASH",
    "DeployConflict",
    "DeployRefused",
    "Deployed",
    "Generation",
    "GenerationWatch",
    "GenerationState",
    "JobGenerations",
    "ModuleGenerations",
    "RecordedResponse",
    "activate",
    "activate_number",
    "active_in_file",
    "code_hash",
    "deploy",
    "load_file",
    "prepare",
    "read_generations",
    "recorded_names",
    "register",
    "retire",
)

for _name in __all__:  # shown as of this package; msgspec structs keep theirs (it resolves their annotations)
    _obj = globals().get(_name)
    if getattr(_obj, "__module__", "").startswith(__name__ + ".") and not hasattr(_obj, "__struct_fields__"):
        _obj.__module__ = __name__
del _name, _obj
