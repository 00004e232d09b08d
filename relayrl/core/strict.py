"""The base of every config section: unknown keys and non-finite numbers are refused."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    # inf and nan are never meaningful settings: lr=inf would pass gt=0 and fail at the first update
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


PositiveInt = Annotated[int, Field(ge=1)]
