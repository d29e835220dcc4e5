"""`CallOverrides`: what one `execute` call overrides in its template (retries, limits, repair, settings, cache).

Each override is checked when the call is prepared; a bad one (`limits={"requests": 0}`, `repair="maybe"`,
an unknown model setting) raises `ConfigurationError`, which the executor turns into a FAILED result.
Most calls override nothing: they share one value, `NO_OVERRIDES`, and take the template's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from atomtask.executors.caching import CacheChoice
from atomtask.loading.model_settings import check_model_settings
from atomtask.system.errors import ConfigurationError
from atomtask.system.templates import RepairMode, TemplateLimits, repair_mode
from pydantic import ValidationError

__all__ = ["NO_OVERRIDES", "CallOverrides"]


@attrs.frozen
class CallOverrides:
    """What a single call overrides in its template."""

    retries: int | None
    limits: TemplateLimits | Mapping[str, Any] | None
    repair: RepairMode | str | bool | None
    model_settings: Mapping[str, Any] | None = None
    cache: CacheChoice = None

    @staticmethod
    def of(
        retries: int | None,
        limits: TemplateLimits | Mapping[str, Any] | None,
        repair: RepairMode | str | bool | None,
        model_settings: Mapping[str, Any] | None,
        cache: CacheChoice,
    ) -> CallOverrides:
        """The overrides of one call (`NO_OVERRIDES` when it overrides nothing)."""
        if retries is None and limits is None and repair is None and model_settings is None and cache is None:
            return NO_OVERRIDES
        return CallOverrides(retries, limits, repair, model_settings, cache)

    def resolve(
        self,
        template_limits: TemplateLimits | None,
        template_settings: Mapping[str, Any] | None,
        template_repair: RepairMode,
    ) -> tuple[TemplateLimits | None, dict[str, Any] | None, RepairMode]:
        """The limits, model settings and repair mode of the call: the template's, with this call's on top."""
        if self is NO_OVERRIDES:  # the usual case, in one step
            return template_limits, dict(template_settings) if template_settings else None, template_repair
        return self.limits_for(template_limits), self.settings_for(template_settings), self.repair_for(template_repair)

    def settings_for(self, template_settings: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The template's model settings with the call's on top, key by key (the call's checked here)."""
        if self.model_settings is None:
            return dict(template_settings) if template_settings else None
        call_settings = check_model_settings(self.model_settings, where="this call (`model_settings=`)")
        return {**(template_settings or {}), **call_settings}

    def repair_for(self, template_repair: RepairMode) -> RepairMode:
        if self.repair is None:
            return template_repair
        try:
            return repair_mode(self.repair)
        except ValueError as exc:
            raise ConfigurationError(f"Invalid `repair=` for this call: {exc}.") from None

    def limits_for(self, template_limits: TemplateLimits | None) -> TemplateLimits | None:
        if self.limits is None:
            return template_limits
        try:
            call_limits = (
                self.limits if isinstance(self.limits, TemplateLimits) else TemplateLimits.model_validate(self.limits)
            )
        except ValidationError as exc:
            raise ConfigurationError(
                f"Invalid `limits=` for this call: {exc.errors(include_url=False)[0]['msg']} "
                f"({'.'.join(str(p) for p in exc.errors()[0]['loc'])}). Limits are positive numbers for "
                "`requests`, `input_tokens`, `output_tokens`, `total_tokens` and `cost` (USD)."
            ) from None
        return call_limits.tightest(template_limits) if template_limits is not None else call_limits


NO_OVERRIDES = CallOverrides(None, None, None)
