"""Where a run's work comes from: a metadata source (the code, or a store) and the runs' records.

`MetadataSource` is what the engine reads (enabled account × platform × module rows with merged config,
credentials, schedules) and `RunLog` where it writes a record per run. `CodeSource` reads the modules
written in code; a `mocra_store.Store` (`mocra[store]`, `[store] url`) satisfies both protocols
structurally. `plan_work` turns a source's rows into the modules' starts and schedules once per run.
"""

from ._admin import RunRow, StoreAdmin, TenantRow, open_store, read_tenants, store_revision, upgrade_store
from ._code import CodeAssignment, CodeCredentials, CodeSchedule, CodeSource
from ._open import open_metadata
from ._plan import WorkPlan, merge_config, plan_work
from ._protocol import AssignmentRow, CredentialsRow, MetadataSource, RunLog, ScheduleRow
from ._runs import RunRecorder, run_status

__all__ = (
    "AssignmentRow",
    "CodeAssignment",
    "CodeCredentials",
    "CodeSchedule",
    "CodeSource",
    "CredentialsRow",
    "MetadataSource",
    "RunLog",
    "RunRecorder",
    "RunRow",
    "ScheduleRow",
    "StoreAdmin",
    "TenantRow",
    "WorkPlan",
    "merge_config",
    "open_metadata",
    "open_store",
    "plan_work",
    "read_tenants",
    "run_status",
    "store_revision",
    "upgrade_store",
)
