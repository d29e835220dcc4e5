"""Durable workflow runs: run ids, a checkpoint per completed step, resume after a crash, on DBOS.

Behind the optional `durable` extra and imported only when a durable run is asked for: the modules
here import DBOS, nothing below this layer knows about them. `_durable` runs, resumes and approves,
`_records` reads the store (`RunInfo`), `_checkpoints` is what one step's checkpoint holds (and how an
approval waits), `_migrations` moves a recorded state to the current version, `_store` is where the
store is and the one DBOS launch per process.
"""
