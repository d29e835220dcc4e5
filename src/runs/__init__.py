"""Durable workflow runs: run ids, a checkpoint per completed step, resume after a crash, on DBOS.

Behind the optional `durable` extra and imported only when a durable run is asked for: the modules
here import DBOS, nothing below this layer knows about them. `durable` runs and resumes, `records`
reads the store, `checkpoints` is what one step's checkpoint holds, `engine` is where the store is.
"""
