"""The queue topics of a job: one for tasks, one for requests, one for each module's responses.

Every stage, the end check and the CLI (`mocra status`, `mocra dlq`) take topic names from here.

- `task`: start tasks and routes, consumed by the generate stage;
- `request`: the requests of every module, consumed by the download stage;
- `response-<module>`: one module's responses, consumed by that module's parse lane, so a module whose
  parse or sink is slow holds only its own lane;
- `response`: where versions before per-module lanes queued every response; a job that still holds
  some has them parsed (`RESPONSES`, the legacy topic).

A module name is kept as it is when it is made of letters, digits and `_`; any other character is
written `-<hex code>-`, so a topic name is plain on every backend (a Redis key part, a NATS subject
token, a Kafka topic name) and two modules never share one.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = (
    "REQUESTS",
    "RESPONSES",
    "STAGES",
    "TASKS",
    "is_response_topic",
    "module_of",
    "response_topic",
    "run_topics",
    "stage_of",
)

TASKS = "task"
"""The task topic (generate stage)."""
REQUESTS = "request"
"""The request topic (download stage)."""
RESPONSES = "response"
"""The response stage's name, and its legacy topic (every module's responses, before per-module lanes)."""
STAGES = (TASKS, REQUESTS, RESPONSES)
"""The stage queues, in the order work flows through them."""

_PLAIN = re.compile(r"[A-Za-z0-9_]+")
_ESCAPE = re.compile(r"[^A-Za-z0-9_]")
_ESCAPED = re.compile(r"-([0-9a-f]+)-")


def response_topic(module: str) -> str:
    """The topic of `module`'s responses.

    Example:
        >>> response_topic("books"), response_topic("my_books"), response_topic("books.eu/2")
        ('response-books', 'response-my_books', 'response-books-2e-eu-2f-2')
    """
    if not isinstance(module, str) or not module:
        raise ValueError(f"a module name is a non-empty str, got {module!r}")
    if _PLAIN.fullmatch(module):
        return f"{RESPONSES}-{module}"
    return f"{RESPONSES}-" + _ESCAPE.sub(lambda match: f"-{ord(match.group()):x}-", module)


def module_of(topic: str) -> str | None:
    """The module whose responses `topic` holds; None for another topic (the legacy `response` too).

    Example:
        >>> module_of("response-books-2e-eu-2f-2"), module_of("response"), module_of("request")
        ('books.eu/2', None, None)
    """
    stage, dash, rest = topic.partition("-")
    if stage != RESPONSES or not dash:
        return None
    return _ESCAPED.sub(lambda match: chr(int(match.group(1), 16)), rest)


def is_response_topic(topic: str) -> bool:
    """Whether `topic` holds responses: a module's response topic or the legacy `response`.

    Example:
        >>> is_response_topic("response-books"), is_response_topic("response"), is_response_topic("request")
        (True, True, False)
    """
    return stage_of(topic) == RESPONSES


def stage_of(topic: str) -> str:
    """The stage queue `topic` belongs to: `task`, `request` or `response`.

    Example:
        >>> [stage_of(t) for t in ("task", "request", "response", "response-books")]
        ['task', 'request', 'response', 'response']
    """
    return topic.partition("-")[0]


def run_topics(modules: Iterable[str]) -> tuple[str, ...]:
    """Every topic a job of `modules` may hold messages in.

    The stages' topics (the legacy `response` included), then each module's response topic, sorted.

    Example:
        >>> run_topics(["b", "a"])
        ('task', 'request', 'response', 'response-a', 'response-b')
    """
    return (*STAGES, *sorted({response_topic(name) for name in modules}))
