"""The config as typed flow parameters, so the Prefect run form shows every field with its type and help.

`ConfigOverrides` is made from `GenEnvConfig` (the single source of truth): one optional field per config field,
its help as the description and its default named in it. A field left empty keeps the config file's value (or
the default). Prefect validates the form before the flow starts, so a wrong type or an unknown field fails
naming it; the ranges are checked by `validate` when the flow starts, still before any model loads.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from genenv.config import GenEnvConfig

_HINTS = get_type_hints(GenEnvConfig)


def _override_field(field: dataclasses.Field, kind: type) -> tuple[Any, Any]:
    shown = repr(field.default) if field.default != "" else "empty"
    return kind | None, Field(default=None, description=f"{field.metadata['help']} Default: {shown}.")


if TYPE_CHECKING:  # made at run time from the config's fields; a caller may pass a dict, which Prefect validates
    ConfigOverrides = BaseModel | dict[str, Any]
else:
    ConfigOverrides = create_model(
        "ConfigOverrides",
        __config__=ConfigDict(extra="forbid"),
        __doc__="Config fields to set on top of the config file; empty ones keep the file's value.",
        **{field.name: _override_field(field, _HINTS[field.name]) for field in dataclasses.fields(GenEnvConfig)},
    )


def override_values(overrides: ConfigOverrides | None) -> dict[str, Any]:
    """The fields a form or caller set, as `load_config` takes them (Prefect has already turned a dict into
    ConfigOverrides, checking it; a flow's function called bare takes the dict as it is)."""
    if isinstance(overrides, BaseModel):
        return overrides.model_dump(exclude_none=True)
    return dict(overrides or {})
