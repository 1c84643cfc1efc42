"""Name -> object registries: how a domain, a generator reward, a generation backend or a benchmark becomes
selectable by name from a config or the command line.

A floor module, like genenv.config: it imports nothing from the project, so every layer can build a registry on it.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """A lookup of a name nobody registered; printed as its message, without KeyError's quotes."""

    def __str__(self) -> str:
        return str(self.args[0])


class PluginError(RuntimeError):
    """An entry point that names an entry but cannot give it: its name and target are in the message."""


class Registry(Generic[T]):
    """`BACKENDS = Registry("backend")`, `@BACKENDS.register("vllm")` on a class, `BACKENDS.get("vllm")`.

    Built-in entries register when their modules import (the built-in domains through entry points, below). A
    registry defined in a package's submodule is therefore complete once imported: Python runs the package's
    __init__ (which imports the built-ins) before the submodule.

    A registry with an entry-point `group` also holds what installed packages declare in that group, so a package
    adds an entry without an edit here. Their names are read on first use; an entry point loads only when its name
    is looked up, so a broken plug-in fails the configs that choose it, not every config.
    """

    def __init__(self, kind: str, group: str | None = None, guide: str | None = None) -> None:
        self.kind = kind
        self.group = group
        self.guide = guide
        """Where adding an entry is documented, for the unknown-name message."""
        self._entries: dict[str, T] = {}
        self._declared: dict[str, list[EntryPoint]] | None = None

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: registers its target under `name` and returns it unchanged. A repeat name (an entry point's
        included) is refused, since silently replacing an entry would change what an existing config means."""

        def decorate(entry: T) -> T:
            if name in self._entries or name in self._plugins():
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = entry
            return entry

        return decorate

    def get(self, name: str) -> T:
        if name not in self._entries and name in self._plugins():
            self._entries[name] = self._load(self._plugins()[name])
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(f"unknown {self.kind} {name!r}; known: {self.names()}{self.how_to_add}") from None

    __getitem__ = get

    def names(self) -> list[str]:
        return sorted({*self._entries, *self._plugins()})

    def __contains__(self, name: object) -> bool:
        return name in self.names()

    @property
    def how_to_add(self) -> str:
        """'; a new domain registers under the entry-point group genenv.domains (guide)', or '' without a group."""
        if self.group is None:
            return ""
        return f"; a new {self.kind} registers under the entry-point group {self.group}" + (
            f" ({self.guide})" if self.guide else ""
        )

    def _plugins(self) -> dict[str, list[EntryPoint]]:
        """The group's entry points by name, read once (importlib.metadata lists each installed distribution once)."""
        if self._declared is None:
            self._declared = {}
            for point in entry_points(group=self.group) if self.group else ():
                self._declared.setdefault(point.name, []).append(point)
        return self._declared

    def _load(self, points: list[EntryPoint]) -> T:
        described = ", ".join(_describe(point) for point in points)
        if len(points) > 1:
            raise PluginError(f"{self.kind} {points[0].name!r} is registered twice: {described}")
        try:
            return points[0].load()
        except Exception as error:
            raise PluginError(f"{self.kind} {points[0].name!r}: {described} failed to load: {error!r}") from error


def _describe(point: EntryPoint) -> str:
    """`entry point 'name = module:attr' (group g, from dist 1.0)`: enough to find the declaration to fix."""
    source = f", from {point.dist.name} {point.dist.version}" if point.dist else ""
    return f"entry point '{point.name} = {point.value}' (group {point.group}{source})"
