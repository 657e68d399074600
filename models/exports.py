"""A family package's exports, imported on first use (PEP 562 module __getattr__): importing one light
module of a family (the QA format, the copular-fact rule, the lexical features) must not load torch,
transformers and every model of the family through the package's __init__."""
from __future__ import annotations

import importlib
import sys


def lazy_exports(package: str, exports: dict[str, list[str]]):
    """The `__getattr__` of `package`: {submodule: [names it defines]}, each name imported from its
    submodule the first time it is asked for, then kept on the package."""
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
