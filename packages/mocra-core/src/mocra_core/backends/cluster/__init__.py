"""The cluster backend: mocra's stores on a `mocra_cluster` control plane (the `cluster` extra).

- `_plane.py` — the one place a node's Raft control plane is started (`open_cluster`, once per run; its
  `ControlPlane` is handed to the others), and the CLI's `cluster_from_env` / `cluster_status`.
- `_coordination.py` — `ClusterCoordination`, the job's `Coordination` on the plane.
- `_seen.py` — `ClusterSeenSet`, the job's seen set on the plane.
- `_ownership.py` — `ControlPlaneOwnership`: which node does the work of a key.

Import them from `mocra_core.coordination`, `mocra_core.dedup` and `mocra_core.engine`.
"""
