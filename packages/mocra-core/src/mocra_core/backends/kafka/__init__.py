"""The Kafka backend: `KafkaQueue` (import it from `mocra_core.queue`; the `kafka` extra, aiokafka).

- `_queue.py` — the queue: lifecycle, publishing, consuming, lease ends (the design is in its docstring).
- `_reader.py`, `_member.py`, `_window.py`, `_state.py` — one consumer-group member per (topic, group):
  its fetch loop; joining, rebalances and commits; the records it holds and leases; what it leased and
  finished, for the next owner of a partition.
- `_lanes.py`, `_produce.py` — publishing to the lane topics; produce requests batched per broker.
- `_dlq.py`, `_pending.py` — the DLQ topics (read back, replayed) and counting what is left.
- `_wire.py` — the one place Kafka clients are made (`Wire`: the producer, admin client and consumers
  of a queue, with retries across outages), and the names and headers of records.
- `_driver.py` — aiokafka, typed: the one module that imports it.
"""
