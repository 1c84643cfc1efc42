"""Name -> object registries: how a domain, a generator reward, a generation backend or a benchmark becomes
selectable by name from a config or the command line.

A floor module, like genenv.config: it imports nothing from the project, so every layer can build a registry on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """A lookup of a name nobody registered; printed as its message, without KeyError's quotes."""

    def __str__(self) -> str:
        return str(self.args[0])


class Registry(Generic[T]):
    """`DOMAINS = Registry("domain")`, `@DOMAINS.register("tool_call")` on a factory, `DOMAINS.get("tool_call")`.

    Built-in entries register when their modules import. A registry defined in a package's submodule is therefore
    complete once imported: Python runs the package's __init__ (which imports the built-ins) before the submodule.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: registers its target under `name` and returns it unchanged. A repeat name is refused, since
        silently replacing an entry would change what an existing config means."""

        def decorate(entry: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = entry
            return entry

        return decorate

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(f"unknown {self.kind} {name!r}; known: {self.names()}") from None

    __getitem__ = get

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries
