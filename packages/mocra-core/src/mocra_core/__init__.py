"""mocra_core: the runtime behind the `mocra` facade."""

from __future__ import annotations

from ._errors import ConfigError, MissingExtra, MocraError

__version__ = "0.1.0"

__all__ = ("ConfigError", "MissingExtra", "MocraError", "__version__")

for _name in __all__:
    _obj = globals()[_name]
    if hasattr(_obj, "__module__"):
        _obj.__module__ = __name__
del _name, _obj
