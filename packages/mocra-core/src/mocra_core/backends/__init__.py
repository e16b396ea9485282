"""The backend drivers: one folder per store or broker, holding everything that talks to it.

- `memory/` — one process, in dicts and lists: `MemoryQueue`, `MemorySeenSet`, `LocalCoordination`.
- `lmdb/` — the processes of one host, in LMDB files (a job dir): `LmdbQueue`, `LmdbSeenSet`,
  `LmdbCoordination`, `LmdbDomainGate`, and the job's saved stats. `lmdb/_env.py` is the one place an
  LMDB environment is opened.
- `redis/` — workers on many hosts, on one Redis server: `RedisStreamsQueue`, `RedisSeenSet`,
  `RedisCoordination`, `RedisDomainGate`. `redis/_connection.py` is the one place a Redis client is built.
  A run's coordination store, seen set and gate on one server share a client (`RedisClients`).
- `nats/` — `NatsJetStreamQueue` on NATS JetStream; `nats/_connection.py` makes the connection.
- `kafka/` — `KafkaQueue` on Kafka; `kafka/_wire.py` makes the Kafka clients.
- `cluster/` — the adapters over a `mocra_cluster` control plane: `ClusterCoordination`, `ClusterSeenSet`,
  `ControlPlaneOwnership`; `cluster/_plane.py` starts a node's control plane.

The protocols they implement stay where the engine sees them (`queue.QueueBackend`, `dedup.SeenSet`,
`coordination.Coordination`, `download.DomainGate`), and so do the public names: import
`mocra_core.queue.RedisStreamsQueue`, not this package's modules. A driver folder imports no other
driver folder (an import-linter contract), and nothing here is imported until a driver is used, so the
base install works without `redis`, `nats` or `aiokafka`.
"""
