"""Peak RSS, push and drain rates of a frontier with the default settings (the queue spills past 100,000).

Run: `uv run python benchmarks/bench_frontier_spill.py [--n 10000000] [--variants default,default-approx]`

`bench_frontier.py` with its `default` variant (the queue and seen set that `BackendPlan.decide(Settings())`
makes: a `SpillingQueue` and a `MemorySeenSet`) by default; each variant runs in its own child process.
"""

from __future__ import annotations

import pathlib
import runpy
import sys

if __name__ == "__main__":
    if not any(arg.startswith("--variants") for arg in sys.argv[1:]):
        sys.argv[1:1] = ["--variants", "default"]
    runpy.run_path(str(pathlib.Path(__file__).with_name("bench_frontier.py")), run_name="__main__")
