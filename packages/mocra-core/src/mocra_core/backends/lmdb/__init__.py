"""The LMDB backends: the processes of one host share a crawl through files (a job dir).

`LmdbQueue`, `LmdbSeenSet`, `LmdbCoordination`, `LmdbDomainGate` (import them from `mocra_core.queue`,
`mocra_core.dedup`, `mocra_core.coordination`, `mocra_core.download`) and the job dir's saved stats
(`StateStore`). `_env.py` is the one place an LMDB environment is opened.
"""
