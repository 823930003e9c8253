"""Use cases of phase 1 (generate): each a declaration handed to the C
simulator. USE_CASES maps the --use-case name to its class."""

from .base import UseCase
from .custom import Custom
from .devops import CpuOnly, CpuSingle, Devops
from .iot import Iot
from .synthetic import Synthetic

USE_CASES: dict[str, type[UseCase]] = {c.name: c for c in (Devops, CpuOnly, CpuSingle, Iot, Synthetic, Custom)}

__all__ = ["USE_CASES", "UseCase"]
