"""The NATS JetStream backend: `NatsJetStreamQueue` (import it from `mocra_core.queue`; the `nats` extra).

- `_queue.py` — the queue: lifecycle, publishing, the DLQ and accounting (the design is in its docstring).
- `_consume.py` — its consuming side: a `Puller` per (topic, group), leases, ack, nack, dead-letter.
- `_pull.py`, `_topology.py` — how one (topic, group) gets messages out of JetStream; its lanes, keys and
  durable consumers.
- `_lease.py`, `_dlq.py`, `_pending.py`, `_wire.py` — lease rules, the DLQ stream, counting what is left,
  names and reply plumbing.
- `_connection.py` — the one place a NATS connection is made (`connect`), its streams, and API calls
  that ride out outages.
"""
