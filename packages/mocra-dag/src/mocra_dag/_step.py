"""What the scheduler runs: a node's `Step` (async function + policy + idempotency key) and its `Inputs`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from ._policy import NodePolicy  # noqa: TC001  (msgspec resolves Struct annotations at runtime)

__all__ = ("Inputs", "NodeFn", "Step", "as_step")


class Inputs(msgspec.Struct, frozen=True):
    """What a node function receives.

    Attributes:
        run_id: The run this call belongs to.
        node: The id of the node being run.
        input: The run's input (or context object), the same for every node.
        upstream: Predecessor id → its output, for every predecessor.
        attempt: 1 for the first attempt, 2 for the first retry, ...

    Example:
        >>> Inputs("r1", "load", None, {"transform": [1, 2]}).value
        [1, 2]
        >>> Inputs("r1", "extract", "s3://bucket/day", {}).value
        's3://bucket/day'
    """

    run_id: str
    node: str
    input: Any
    upstream: dict[str, Any]
    attempt: int = 1

    @property
    def value(self) -> Any:
        """The single upstream output, or the run's input for a root node.

        Raises:
            ValueError: The node has several predecessors; read `upstream` instead.
        """
        if not self.upstream:
            return self.input
        if len(self.upstream) == 1:
            return next(iter(self.upstream.values()))
        raise ValueError(f"node {self.node!r} has {len(self.upstream)} upstreams {list(self.upstream)}")


NodeFn = Callable[[Inputs], Awaitable[Any]]
"""An async node function: `async def fn(inputs: Inputs) -> output`."""


class Step(msgspec.Struct, frozen=True):
    """A node's async function with its own policy and idempotency key.

    A bare async function as a node payload is the same as `Step(fn)`.

    Attributes:
        fn: `async def fn(inputs: Inputs) -> output`.
        policy: Retries, timeout and breaker; None uses the scheduler's default policy.
        key: `inputs -> str | None`, called once before the first attempt: nodes (of any run of the
            scheduler) with the same key share one output. A key found in the store's output cache is
            reused without running; concurrent calls with one key run once (single-flight). Keys are
            global: include whatever identifies the computation. None (or a key of None): always run.
        output_type: The type stored outputs are converted to when they are restored or reused from the
            cache (`msgspec.convert`), e.g. a Struct; None leaves them as decoded msgpack (dict, list, ...).

    Example:
        >>> async def transform(inputs: Inputs) -> list[int]:
        ...     return sorted(inputs.value)
        >>> step = Step(transform, policy=NodePolicy(max_retries=2), key=lambda i: f"t:{i.value}")
        >>> step.key(Inputs("r1", "transform", None, {"extract": [3, 1]}))
        't:[3, 1]'
    """

    fn: NodeFn
    policy: NodePolicy | None = None
    key: Callable[[Inputs], str | None] | None = None
    output_type: Any = None


def as_step(node: str, payload: object) -> Step:
    """Return the `Step` of a node payload (a `Step` or an async callable).

    Raises:
        TypeError: The payload is neither.
    """
    if isinstance(payload, Step):
        return payload
    if callable(payload):
        return Step(payload)
    raise TypeError(f"node {node!r} must carry an async callable or a Step, got {type(payload).__name__}")
