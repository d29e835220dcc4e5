"""What a run would cost before the first token: `atomtask run|workflow run|batch --dry-run`, `TaskSystem.estimate`.

`_estimate` traces a template, a workflow or a batch's items the way a run goes, without a model
(`estimate_task`, `estimate_workflow`, `estimate_items`); `_requests` measures each call from the
request body pydantic-ai would send and prices it with genai-prices; `_figures` holds what comes out
(`Estimate`, exported from `atomtask`; `TemplateEstimate`, `ItemEstimate`, `Figures`: expected and worst
case). The estimate's users are `TaskSystem.estimate`, the `--dry-run` commands and a batch's `--max-cost`.
"""
