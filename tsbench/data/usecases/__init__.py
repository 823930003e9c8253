"""Use cases of phase 1 (generate): each a declaration handed to the C
simulator. use_case(name) gives the class of a --use-case name; USE_CASES
lists the names. The custom use case (pydantic models of a YAML schema) is
imported only when asked for: the other use cases start without it."""

from importlib import import_module

from tsbench.data.usecases.base import UseCase

USE_CASES: dict[str, str] = {"devops": "devops:Devops", "cpu-only": "devops:CpuOnly",
                             "cpu-single": "devops:CpuSingle", "iot": "iot:Iot",
                             "synthetic": "synthetic:Synthetic", "custom": "custom:Custom"}


def use_case(name: str) -> type[UseCase]:
    """The class of a use case named in USE_CASES (KeyError for another name)."""
    module, cls = USE_CASES[name].split(":")
    return getattr(import_module(f"{__name__}.{module}"), cls)


__all__ = ["USE_CASES", "UseCase", "use_case"]
