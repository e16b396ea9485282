"""The Redis backends: everything that talks to Redis, for workers of a crawl on any number of hosts.

`RedisStreamsQueue` (`_queue*.py`: streams, Lua scripts, leases, bell, DLQ), `RedisCoordination`,
`RedisSeenSet` and `RedisDomainGate`; import them from `mocra_core.queue`, `mocra_core.coordination`,
`mocra_core.dedup` and `mocra_core.download` (they need the `redis` extra). `_connection.py` is the one
place a Redis client is built; `RedisClients` shares one per server between a run's coordination store,
seen set and gate.
"""
