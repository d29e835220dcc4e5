"""The vocabulary: what users declare and get back, exported from `atomtask`.

`_templates` (`Template`, `OutputFormat`, parameters, limits), `_workflows` (`Workflow`, `Step`,
routes, escalation, migrations), `_options` (the request, the cache policy, provider retries,
tracing settings) and `_results` (`TaskResult`, `WorkflowResult`, `BatchItemResult`). Imports
nothing of atomtask but its errors.
"""
