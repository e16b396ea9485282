"""Starting a Raft node from a `ClusterConfig`: the password's signer, the join handshake, the node."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from ._errors import ClusterUnavailable
from ._raft_admin import add_voter, cluster_of
from ._raft_auth import MessageAuthenticator
from ._raft_node import JOURNAL, RaftNode

if TYPE_CHECKING:
    from ._config import ClusterConfig
    from ._machine import StateMachine

__all__ = ("start_node",)

logger = logging.getLogger(__name__)


def _partners_through_seeds(config: ClusterConfig, authenticator: MessageAuthenticator) -> list[str]:
    """Join through the first seed that answers; return the voters to start with."""
    failures = []
    for seed in config.seeds:
        try:
            voters = cluster_of(seed, authenticator)
            if config.addr not in voters:
                logger.info("asking %s to add voter %s", seed, config.addr)
                add_voter(seed, config.addr, authenticator)
                voters = sorted({*voters, config.addr})
            return voters
        except ClusterUnavailable as exc:
            failures.append(str(exc))
    if os.path.exists(os.path.join(config.data_dir, JOURNAL)):
        # A restarting member: its journal knows the voters; the seeds are members too.
        logger.warning("no seed answered (%s); restarting from the local journal", "; ".join(failures))
        return list(config.seeds)
    raise ClusterUnavailable(f"cannot join: no seed answered ({'; '.join(failures)})")


def start_node(config: ClusterConfig, machine: StateMachine) -> RaftNode:
    """Build the Raft node of `config` around `machine` (blocking: run it on a worker thread).

    A bootstrap config starts with its initial voters; a join config first asks a seed for the
    voters and to add this node (skipped when it already is a voter, e.g. on a restart).

    Raises:
        ClusterUnavailable: no seed answered and there is no local journal to restart from.
        ClusterError: the address cannot be bound.
    """
    os.makedirs(config.data_dir, exist_ok=True)
    authenticator = MessageAuthenticator(config.password)
    partners = _partners_through_seeds(config, authenticator) if config.seeds else list(config.peers)
    return RaftNode(
        addr=config.addr,
        partners=partners,
        data_dir=config.data_dir,
        tuning=config.tuning,
        authenticator=authenticator,
        machine=machine,
    )
