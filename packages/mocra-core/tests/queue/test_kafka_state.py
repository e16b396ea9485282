"""`State.of` against what it must say of every offset, on random windows (no broker needed)."""

from __future__ import annotations

import random

import msgspec
import pytest

pytest.importorskip("aiokafka")

from mocra_core.backends.kafka._state import DONE, LOST, NEW, State


@pytest.mark.parametrize("seed", range(200))
def test_a_state_says_done_lost_or_new_of_every_offset_as_the_window_holds_it(seed: int) -> None:
    rng = random.Random(seed)
    start = rng.randrange(0, 50)
    next = start + rng.randrange(0, 60)
    live = sorted(o for o in range(start, next) if rng.random() < rng.choice([0.2, 0.7, 1.0]))
    if rng.random() < 0.5 and live:  # the usual window: a gappy front, then an untouched contiguous tail
        live = sorted(set(live) | set(range(live[-1], next)))
    lost = {o for o in live if rng.random() < 0.3}
    state = State.of(live, next, lost, None)
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(state), type=State) == state  # as the log keeps it
    for offset in range(max(start - 5, 0), next + 5):
        if offset >= next:
            expected = NEW
        elif offset in lost:
            expected = LOST
        elif offset in live:
            expected = NEW
        else:
            expected = DONE
        assert state.verdict(offset) == expected, (offset, live, lost, next, state)


def test_an_empty_window_is_all_done_up_to_next() -> None:
    state = State.of([], 7, (), None)
    assert (state.base, state.done, state.lost) == (7, [], [])
    assert [state.verdict(o) for o in (6, 7)] == [DONE, NEW]
