"""Deep merge of config dicts: later layers win, nested dicts merge key by key."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ("deep_merge",)


def deep_merge(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Merge the layers left to right into a new dict; nested mappings merge, anything else is replaced.

    >>> deep_merge({"a": 1, "http": {"timeout": 5, "retries": 2}}, {"http": {"timeout": 9}, "b": [1]})
    {'a': 1, 'http': {'timeout': 9, 'retries': 2}, 'b': [1]}
    """
    merged: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            current = merged.get(key)
            if isinstance(value, Mapping) and isinstance(current, dict):
                merged[key] = deep_merge(current, value)
            elif isinstance(value, Mapping):
                merged[key] = deep_merge(value)
            else:
                merged[key] = copy.deepcopy(value)
    return merged
