"""The in-process backends: `MemoryQueue`, `MemorySeenSet`, `LocalCoordination` (one process, no files).

Import them from `mocra_core.queue`, `mocra_core.dedup` and `mocra_core.coordination`.
"""
