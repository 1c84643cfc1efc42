"""TextWorld behind four calls: compile a spec, check it is winnable, play it turn by turn, measure a random agent.

TextWorld (and its GPL dependency jericho) is the optional `text-game` extra: it is imported here only, when a
game is first built, and its absence is an error that says how to install it. Compiling a game takes about a
second; opening one 20-30 ms; a step a few ms. Compiled games are cached by spec, with their objective and
walkthrough beside them, so a spec compiles once per cache folder.
"""

from __future__ import annotations

import json
import random
import re
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genenv.domains.base import DomainUnavailable
from genenv.domains.text_game.spec import GameSpec, SpecRejected

GAME_REJECT_REASONS = ("does_not_compile", "walkthrough_length", "walkthrough_fails")
MAX_INPUT_CHARS = 120
INSTALL_HINT = "the text_game domain needs TextWorld: pip install 'genenv-coevolve[text-game]'"


class TextGameUnavailable(DomainUnavailable):
    """TextWorld is not installed."""


@dataclass(frozen=True)
class CompiledGame:
    spec: GameSpec
    path: Path
    objective: str
    walkthrough: tuple[str, ...]


@dataclass(frozen=True)
class Observation:
    text: str
    admissible: tuple[str, ...]
    won: bool
    lost: bool

    @property
    def done(self) -> bool:
        return self.won or self.lost


@dataclass(frozen=True)
class Turn:
    command: str
    observation: Observation
    """What the game answered to `command`."""


@dataclass(frozen=True)
class EpisodeResult:
    start: Observation
    turns: tuple[Turn, ...]

    @property
    def won(self) -> bool:
        return bool(self.turns) and self.turns[-1].observation.won


Policy = Callable[[Observation, tuple[Turn, ...]], str]
"""Chooses the next command from the latest observation and the turns so far."""


def require_textworld() -> Any:
    """The textworld module, or TextGameUnavailable saying how to install it."""
    try:
        import textworld
        import textworld.generator
    except ImportError:
        raise TextGameUnavailable(INSTALL_HINT) from None
    return textworld


def compile_game(spec: GameSpec, cache_dir: Path) -> CompiledGame:
    """The game of `spec`, compiled into `cache_dir` (or found there), with a walkthrough that wins it in exactly
    `quest_length` steps; otherwise SpecRejected. TextWorld can record a shorter quest than asked for when it
    cannot place one, so the length is checked, and the walkthrough replayed."""
    path = cache_dir / f"{spec.key}.z8"
    sidecar = path.with_suffix(".genenv.json")  # beside TextWorld's own <key>.json
    if path.is_file() and sidecar.is_file():
        known = json.loads(sidecar.read_text())
        return CompiledGame(spec, path, known["objective"], tuple(known["walkthrough"]))
    textworld = require_textworld()
    options = textworld.GameOptions()
    options.seeds = spec.seed
    options.nb_rooms = spec.rooms
    options.nb_objects = spec.objects
    options.quest_length = spec.quest_length
    options.path = str(path)
    options.force_recompile = True
    cache_dir.mkdir(parents=True, exist_ok=True)
    try:
        game = textworld.generator.make_game(options)
        textworld.generator.compile_game(game, options)
    except Exception as exc:  # TextWorld signals an impossible world with many exception types
        raise SpecRejected("does_not_compile", f"{spec.to_json()}: {type(exc).__name__}: {exc}") from None
    compiled = CompiledGame(spec, path, game.objective, tuple(game.metadata["walkthrough"]))
    _check_walkthrough(compiled)
    sidecar.write_text(json.dumps({"objective": compiled.objective, "walkthrough": list(compiled.walkthrough)}))
    return compiled


def _check_walkthrough(game: CompiledGame) -> None:
    if len(game.walkthrough) != game.spec.quest_length:
        raise SpecRejected(
            "walkthrough_length",
            f"{game.spec.to_json()}: the walkthrough has {len(game.walkthrough)} steps, the quest asks for "
            f"{game.spec.quest_length}",
        )
    commands = iter(game.walkthrough)
    result = play(game, lambda observation, turns: next(commands), max_steps=len(game.walkthrough))
    if not result.won:
        raise SpecRejected("walkthrough_fails", f"{game.spec.to_json()}: replaying the walkthrough does not win")


_STATUS_LINE = re.compile(r"\n>\s.*\Z", re.DOTALL)
"""The prompt and status bar (room, score) the interpreter prints after each answer."""


def _observation(state: Any, text: str) -> Observation:
    return Observation(
        text=_STATUS_LINE.sub("", text).strip(),
        admissible=tuple(state["admissible_commands"] or ()),
        won=bool(state["won"]),
        lost=bool(state["lost"]),
    )


def game_input(command: str) -> str:
    """`command` as the interpreter may read it: printable ASCII on one line, at most MAX_INPUT_CHARS. The Z-machine
    reads ASCII, and the C interpreter under TextWorld crashes the process on some bytes (a NUL does)."""
    printable = "".join(c if " " <= c <= "~" else " " for c in command)
    return " ".join(printable.split())[:MAX_INPUT_CHARS]


class GameSession:
    """One open game, stepped by the caller: many sessions can advance together, one command each per turn (the
    agent's commands for all of them come from one batched generation). Commands are game input only: the game
    parses them, nothing executes them."""

    def __init__(self, game: CompiledGame) -> None:
        textworld = require_textworld()
        infos = textworld.EnvInfos(
            admissible_commands=True, objective=True, description=True, won=True, lost=True, extras=["walkthrough"]
        )
        with warnings.catch_warnings():  # jericho knows the classic Infocom games; TextWorld's own work anyway
            warnings.filterwarnings("ignore", message="Game .* is not fully supported")
            self._env = textworld.start(str(game.path), infos)
        self.game = game
        state = self._env.reset()
        self.start = _observation(state, f"{game.objective}\n\n{state['description']}")
        self.turns: list[Turn] = []

    @property
    def observation(self) -> Observation:
        return self.turns[-1].observation if self.turns else self.start

    def step(self, command: str) -> Observation:
        command = game_input(command)
        state, _, _ = self._env.step(command)
        self.turns.append(Turn(command, _observation(state, state["feedback"])))
        return self.observation

    def result(self) -> EpisodeResult:
        return EpisodeResult(self.start, tuple(self.turns))

    def close(self) -> None:
        self._env.close()


@contextmanager
def session(game: CompiledGame) -> Iterator[GameSession]:
    opened = GameSession(game)
    try:
        yield opened
    finally:
        opened.close()


def play(game: CompiledGame, policy: Policy, max_steps: int) -> EpisodeResult:
    """One episode: the objective and the first room, then `policy`'s commands until a win, a loss or
    `max_steps`."""
    with session(game) as playing:
        while not playing.observation.done and len(playing.turns) < max_steps:
            playing.step(policy(playing.observation, tuple(playing.turns)))
        return playing.result()


def random_agent_success(game: CompiledGame, episodes: int, max_steps: int, seed: int = 0) -> float:
    """Share of episodes a uniformly random choice among the admissible commands wins: how hard the game is
    before any learning."""
    rng = random.Random(seed)
    wins = sum(
        play(game, lambda observation, turns: rng.choice(observation.admissible), max_steps).won
        for _ in range(episodes)
    )
    return wins / episodes
