"""ClusterConfig and RaftTuning: constructors, environment variables, and errors that name the setting."""

from __future__ import annotations

import msgspec
import pytest

from mocra_cluster import ClusterConfig, ClusterConfigError, RaftTuning

ENV = {
    "MOCRA_NODE_ID": "node-a",
    "MOCRA_CLUSTER_ADDR": "10.0.0.1:7100",
    "MOCRA_DATA_DIR": "/var/lib/mocra",
    "MOCRA_CLUSTER_PASSWORD": "s3cret",
}


def test_env_without_seeds_bootstraps_a_single_node() -> None:
    config = ClusterConfig.from_env(ENV)
    assert (config.node_id, config.voters, config.seeds, config.peers) == (
        "node-a",
        ("10.0.0.1:7100",),
        (),
        (),
    )


def test_env_seeds_with_own_address_list_the_initial_voters() -> None:
    config = ClusterConfig.from_env({**ENV, "MOCRA_SEEDS": "10.0.0.2:7100, 10.0.0.1:7100"})
    assert config.voters == ("10.0.0.1:7100", "10.0.0.2:7100")
    assert config.peers == ("10.0.0.2:7100",)


def test_env_seeds_without_own_address_join() -> None:
    config = ClusterConfig.from_env({**ENV, "MOCRA_SEEDS": "10.0.0.2:7100,10.0.0.3:7100"})
    assert (config.voters, config.seeds) == ((), ("10.0.0.2:7100", "10.0.0.3:7100"))


@pytest.mark.parametrize("variable", sorted(ENV))
def test_a_missing_variable_is_named(variable: str) -> None:
    env = {key: value for key, value in ENV.items() if key != variable}
    with pytest.raises(ClusterConfigError, match=f"^{variable}: is not set") as caught:
        ClusterConfig.from_env(env)
    assert caught.value.key == variable


@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [
        ("MOCRA_NODE_ID", "node a", "expected 1-128 letters"),
        ("MOCRA_CLUSTER_ADDR", "10.0.0.1:http", "expected host:port"),
        ("MOCRA_CLUSTER_ADDR", "10.0.0.1:70000", "port must be 1-65535"),
        ("MOCRA_SEEDS", "10.0.0.2", "expected host:port"),
    ],
)
def test_a_malformed_variable_is_named(variable: str, value: str, problem: str) -> None:
    with pytest.raises(ClusterConfigError, match=f"^{variable}: {problem}"):
        ClusterConfig.from_env({**ENV, variable: value})


def test_the_password_is_required_and_never_shown() -> None:
    with pytest.raises(ClusterConfigError, match="^password: a cluster password is required"):
        ClusterConfig.bootstrap("a", "127.0.0.1:7100", "/d", password="")
    config = ClusterConfig.bootstrap("a", "127.0.0.1:7100", "/d", password="hunter2")
    assert "hunter2" not in repr(config)


def test_join_needs_a_seed_and_voters_exclude_seeds() -> None:
    with pytest.raises(ClusterConfigError, match="^seed: at least one"):
        ClusterConfig.join("b", "127.0.0.1:7101", "/d", seed=[], password="pw")
    with pytest.raises(ClusterConfigError, match="^seeds: give voters"):
        ClusterConfig(node_id="a", addr="h:1", data_dir="/d", password="pw", voters=("h:1",), seeds=("h:2",))
    with pytest.raises(ClusterConfigError, match="^voters: must include"):
        ClusterConfig(node_id="a", addr="h:1", data_dir="/d", password="pw", voters=("h:2",))


def test_tuning_is_checked_and_mapped_to_pysyncobj() -> None:
    options = RaftTuning(heartbeat=0.1, election_timeout_min=0.5, election_timeout_max=1.0).syncobj_options()
    assert (options["appendEntriesPeriod"], options["raftMinTimeout"], options["raftMaxTimeout"]) == (
        0.1,
        0.5,
        1.0,
    )
    with pytest.raises(ValueError, match="election_timeout_max"):
        RaftTuning(election_timeout_min=0.6, election_timeout_max=0.6)
    with pytest.raises(ValueError, match="connection_timeout"):
        RaftTuning(connection_timeout=0.5)
    with pytest.raises(ValueError, match="commit_timeout must be positive"):
        RaftTuning(commit_timeout=0)


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("max_frame_bytes", 1000, "expected 1 MiB to 2 GiB, got 1000"),
        ("max_frame_bytes", 1 << 31, "expected 1 MiB to 2 GiB, got 2147483648"),
        ("max_pending_connections", 0, "expected at least 1, got 0"),
        ("handshake_timeout", 0.0, "expected a positive number of seconds, got 0.0"),
    ],
)
def test_peer_limits_are_checked_by_name(field: str, value: object, problem: str) -> None:
    config = ClusterConfig.bootstrap("a", "127.0.0.1:7100", "/tmp/a", password="pw")
    with pytest.raises(ClusterConfigError, match=f"^{field}: {problem}$") as refused:
        msgspec.structs.replace(config, **{field: value})
    assert refused.value.key == field
    assert (config.max_frame_bytes, config.max_pending_connections, config.handshake_timeout) == (
        16 << 20,
        32,
        2.0,
    )
