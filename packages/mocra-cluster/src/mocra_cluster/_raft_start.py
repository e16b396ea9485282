"""Starting a Raft node from a `ClusterConfig`: the password's signer, the node, the join handshake.

A node joins a running cluster in pysyncobj's order: it asks a seed for the current voters, starts
its own node with them as partners (it cannot win an election: it is in nobody's configuration yet),
and only then asks the seed to add it (`admit`). The leader commits the change once a majority of
the *new* voter set has it, which for a one-voter cluster includes the newcomer, so the newcomer
must already be running. The leader allows one membership change at a time: a join that is refused
tries again with backoff until `tuning.join_timeout`.
"""

from __future__ import annotations

import logging
import os
import random
import time
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from ._errors import ClusterUnavailable
from ._raft_admin import add_voter, cluster_of
from ._raft_auth import MessageAuthenticator
from ._raft_node import JOURNAL, RaftNode
from ._raft_transport import PeerLimits

if TYPE_CHECKING:
    from ._config import ClusterConfig
    from ._machine import StateMachine

__all__ = ("admit", "start_node")

logger = logging.getLogger(__name__)

_FIRST_RETRY = 0.1
_LONGEST_RETRY = 2.0


def _partners_through_seeds(
    config: ClusterConfig, authenticator: MessageAuthenticator
) -> tuple[list[str], bool]:
    """Return the voters to start with, and whether this node still has to be added to them."""
    failures = []
    for seed in config.seeds:
        try:
            voters = cluster_of(seed, authenticator)
        except ClusterUnavailable as exc:
            failures.append(str(exc))
            continue
        return voters, config.addr not in voters
    if os.path.exists(os.path.join(config.data_dir, JOURNAL)):
        # A restarting member: its journal knows the voters; the seeds are members too.
        logger.warning("no seed answered (%s); restarting from the local journal", "; ".join(failures))
        return list(config.seeds), False
    raise ClusterUnavailable(f"cannot join: no seed answered ({'; '.join(failures)})")


def start_node(config: ClusterConfig, machine: StateMachine) -> tuple[RaftNode, bool]:
    """Build the Raft node of `config` around `machine` (blocking: run it on a worker thread).

    A bootstrap config starts with its initial voters; a join config asks a seed for the voters and
    starts with them. Returns the node and whether it must then be `admit`ted (a join config whose
    address is not a voter yet; False on a restart of a member).

    Raises:
        ClusterUnavailable: no seed answered and there is no local journal to restart from.
        ClusterError: the address cannot be bound.
    """
    os.makedirs(config.data_dir, exist_ok=True)
    authenticator = MessageAuthenticator(config.password)
    partners, joining = (
        _partners_through_seeds(config, authenticator) if config.seeds else (list(config.peers), False)
    )
    node = RaftNode(
        addr=config.addr,
        partners=partners,
        data_dir=config.data_dir,
        tuning=config.tuning,
        authenticator=authenticator,
        limits=PeerLimits(config.max_frame_bytes, config.max_pending_connections, config.handshake_timeout),
        machine=machine,
        joining=joining,
    )
    return node, joining


async def admit(config: ClusterConfig) -> None:
    """Have a seed add this (running) node as a voter; return once the seed lists it as one.

    Asks the seeds in turn. A refusal (another membership change in progress, or a leader just
    elected) or a seed that does not answer is retried with backoff (0.1 s doubling to 2 s,
    jittered); an address the seed already lists as a voter counts as added (an earlier answer may
    have been lost). Each attempt blocks a worker thread for at most 3 s.

    Raises:
        ClusterUnavailable: not added within `config.tuning.join_timeout` seconds; names the seeds.
    """
    authenticator = MessageAuthenticator(config.password)
    timeout = config.tuning.join_timeout
    deadline = time.monotonic() + timeout
    delay, last = _FIRST_RETRY, "no answer yet"
    while True:
        for seed in config.seeds:
            logger.info("asking %s to add voter %s", seed, config.addr)
            try:
                if await anyio.to_thread.run_sync(add_voter, seed, config.addr, authenticator):
                    return
                if config.addr in await anyio.to_thread.run_sync(cluster_of, seed, authenticator):
                    return
                last = f"{seed} refused to add it (another membership change in progress?)"
            except ClusterUnavailable as exc:
                last = str(exc)
        if time.monotonic() + delay > deadline:
            raise ClusterUnavailable(
                f"cannot join through {', '.join(config.seeds)}: {config.addr} was not added as a voter "
                f"within {timeout:g} s (join_timeout); last: {last}"
            )
        await anyio.sleep(delay * random.uniform(0.5, 1.5))  # jitter
        delay = min(2 * delay, _LONGEST_RETRY)
