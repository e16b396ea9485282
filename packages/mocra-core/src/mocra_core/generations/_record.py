"""The record of a job's generations: per module, its generations and which one is active."""

from __future__ import annotations

from typing import Literal

import msgspec

from ._code import UNKNOWN_HASH

__all__ = ("Generation", "GenerationState", "JobGenerations", "ModuleGenerations", "decode", "encode")

GenerationState = Literal["active", "draining", "retired"]
"""`active`: new work is made by it; `draining`: its queued work finishes; `retired`: it has none left."""


class Generation(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One generation of a module: its number (1, 2, …), the hash of its code, its state.

    Attributes:
        number: 1 for the code a job first ran with, then one more per new code deployed.
        hash: `code_hash` of its code ("" for a job recorded before generations: filled in by the first
            worker that starts).
        state: `active`, `draining` or `retired`.
        activated: When it was last activated (seconds since the epoch; 0 unknown).
        shape: The shape of its items (`field:type`, sorted) as a deploy's verify saw them; () unknown.
    """

    number: int
    hash: str
    state: GenerationState = "active"
    activated: float = 0.0
    shape: tuple[str, ...] = ()


class ModuleGenerations(msgspec.Struct, frozen=True, kw_only=True):
    """The generations of one module, oldest first; one is `active` (none once a deploy removed the module).

    Example:
        >>> gens = ModuleGenerations(generations=(Generation(number=1, hash="a1"),))
        >>> gens.find_hash("a1").number, gens.find_hash("b2")
        (1, None)
        >>> [(g.number, g.state) for g in gens.activate("b2", now=0.0).generations]
        [(1, 'draining'), (2, 'active')]
    """

    generations: tuple[Generation, ...]

    @classmethod
    def new(cls, code: str, *, now: float, shape: tuple[str, ...] = ()) -> ModuleGenerations:
        """The generations of a module new to the job: generation 1, of code `code`, active."""
        return cls(generations=(Generation(number=1, hash=code, activated=now, shape=shape),))

    @property
    def active(self) -> Generation | None:
        """The generation new work is made by; None for a module a deploy removed (its work drains)."""
        return next((g for g in self.generations if g.state == "active"), None)

    def number(self, number: int) -> Generation | None:
        """The generation numbered `number`, or None."""
        return next((g for g in self.generations if g.number == number), None)

    def find_hash(self, code: str) -> Generation | None:
        """The latest generation of code `code`, or None."""
        return next((g for g in reversed(self.generations) if g.hash == code), None)

    def activate(
        self, code: str, *, now: float, previous: GenerationState = "draining", shape: tuple[str, ...] = ()
    ) -> ModuleGenerations:
        """These generations with `code` active: a new generation, or an earlier one of that code again.

        The generation active before becomes `previous` (`draining`: its queued work finishes on workers
        that have it; `retired`: its work is taken by the new one, as when a job dir restarts with new
        code). Activating the active code changes nothing. `shape` is the shape a verify saw (kept as the
        generation's when it is not empty).
        """
        active = self.active
        if active is not None and active.hash == code:
            return self
        again = self.find_hash(code)
        number = again.number if again is not None else self.generations[-1].number + 1
        changed = [
            msgspec.structs.replace(g, state=previous) if g.state == "active" else g for g in self.generations
        ]
        fresh = Generation(
            number=number, hash=code, activated=now, shape=shape or (again.shape if again else ())
        )
        if again is not None:
            changed = [fresh if g.number == number else g for g in changed]
        else:
            changed.append(fresh)
        return ModuleGenerations(generations=tuple(changed))

    def activate_number(self, number: int, *, now: float) -> ModuleGenerations:
        """These generations with generation `number` active again (a rollback).

        Raises:
            KeyError: there is no generation `number`.
        """
        found = self.number(number)
        if found is None:
            raise KeyError(number)
        return self.activate(found.hash, now=now)

    def remove(self) -> ModuleGenerations:
        """These generations with none active (the module left the job's code): its active one drains."""
        return ModuleGenerations(
            generations=tuple(
                msgspec.structs.replace(g, state="draining") if g.state == "active" else g
                for g in self.generations
            )
        )

    def retire(self, number: int) -> ModuleGenerations:
        """These generations with the draining generation `number` retired (its work is done)."""
        return ModuleGenerations(
            generations=tuple(
                msgspec.structs.replace(g, state="retired")
                if g.number == number and g.state == "draining"
                else g
                for g in self.generations
            )
        )


class JobGenerations(msgspec.Struct, frozen=True, kw_only=True):
    """The generations of every module of a job, as its coordination store keeps them.

    Attributes:
        modules: Per module name, its generations.
        epoch: One more at every change (a worker compares it to notice an activation cheaply).
        v: The record's layout version.

    Example:
        >>> record = JobGenerations.first({"news": "a1"}, now=0.0)
        >>> record.active(), record.epoch
        ({'news': 1}, 1)
    """

    modules: dict[str, ModuleGenerations] = {}
    epoch: int = 0
    v: int = 1

    @classmethod
    def first(cls, hashes: dict[str, str], *, now: float) -> JobGenerations:
        """The record of a job's first run: generation 1 of each module."""
        return cls(
            modules={name: ModuleGenerations.new(code, now=now) for name, code in hashes.items()}, epoch=1
        )

    @classmethod
    def of_names(cls, names: list[str]) -> JobGenerations:
        """The record of a job recorded before generations (a list of module names): generation 1 of each."""
        return cls.first(dict.fromkeys(names, UNKNOWN_HASH), now=0.0)

    def with_module(self, name: str, generations: ModuleGenerations) -> JobGenerations:
        """This record with `name`'s generations replaced (one epoch later), or itself if they are equal."""
        if self.modules.get(name) == generations:
            return self
        return JobGenerations(modules={**self.modules, name: generations}, epoch=self.epoch + 1, v=self.v)

    def active(self) -> dict[str, int]:
        """The active generation's number of each module that has one."""
        found = {name: gens.active for name, gens in sorted(self.modules.items())}
        return {name: g.number for name, g in found.items() if g is not None}


def encode(record: JobGenerations) -> bytes:
    """The record as stored (JSON)."""
    return msgspec.json.encode(record)


def decode(raw: bytes) -> JobGenerations:
    """A stored record: a `JobGenerations`, or the list of module names jobs recorded before generations.

    Example:
        >>> decode(b'["news"]').modules["news"].generations
        (Generation(number=1, hash='', state='active', activated=0.0, shape=()),)
    """
    if raw.lstrip()[:1] == b"[":
        return JobGenerations.of_names(msgspec.json.decode(raw, type=list[str]))
    return msgspec.json.decode(raw, type=JobGenerations)
