"""The text_game domain: the simulator writes game specs, the agent plays them turn by turn, R_agent is a win.

Games compile into `<data_dir>/cache/games` (keyed by spec, so every stage and process reuses them). There are no
evaluation benchmarks for this domain here (ALFWorld's games are release downloads), so nothing to decontaminate
against; held-out seeds are kept out of training as in every domain.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from genenv.config import GenEnvConfig
from genenv.domains.base import Candidate, Messages, TaskInstance, ValidationContext, Verdict
from genenv.domains.text_game import authoring
from genenv.domains.text_game.engine import CompiledGame, compile_game, require_textworld
from genenv.domains.text_game.episodes import TextGameEpisode, replay
from genenv.domains.text_game.spec import GameSpec


class TextGameDomain:
    name = "text_game"

    def __init__(self, config: GenEnvConfig) -> None:
        require_textworld()  # refuse the domain, at config validation, where TextWorld is missing
        self.max_turns = config.episode_max_turns
        self.show_admissible = config.show_admissible_commands
        self.games_dir = Path(config.data_dir).resolve() / "cache" / "games"

    def game(self, task: TaskInstance) -> CompiledGame:
        return compile_game(GameSpec.from_dict(task.spec["game"]), self.games_dir)

    def load_seeds(self) -> list[TaskInstance]:
        return authoring.load_seeds()

    def agent_messages(self, task: TaskInstance) -> Messages:
        episode = self.start_episode(task)
        try:
            return episode.messages()
        finally:
            episode.close()

    def start_episode(self, task: TaskInstance) -> TextGameEpisode:
        return TextGameEpisode(self.game(task), self.max_turns, self.show_admissible)

    def demonstrations(self, task: TaskInstance) -> list[tuple[Messages, str]]:
        """The walkthrough played: each turn's conversation so far, and the walkthrough's next command."""
        episode = self.start_episode(task)
        pairs = []
        try:
            for command in task.answer.splitlines():
                pairs.append((episode.messages(), command))
                episode.step(command)
        finally:
            episode.close()
        return pairs

    def difficulty(self, task: TaskInstance) -> float:
        """The quest's length: the commands a win takes."""
        return float(task.spec["game"]["quest_length"])

    def simulator_messages(
        self, seed: TaskInstance, success_rate: float | None, alpha: float = 0.5, k_min: float = 0.1
    ) -> Messages:
        return authoring.simulator_messages(seed, success_rate, alpha, k_min)

    def simulator_target(self, task: TaskInstance) -> str:
        return authoring.simulator_target(task)

    def parse_candidate(self, raw: str, seed: TaskInstance, task_id: str, truncated: bool) -> Candidate:
        return authoring.parse_candidate(raw, task_id, truncated)

    def validate(self, candidate: Candidate, context: ValidationContext) -> Candidate:
        return authoring.validate(candidate, context, self.games_dir)

    def dedup_key(self, task: TaskInstance) -> str:
        return authoring.dedup_key(task)

    def sibling_key(self, task: TaskInstance) -> str:
        """Games of the same size and quest length (other seeds): each world is its own family, held out alone."""
        game = task.spec["game"]
        return f"rooms-{game['rooms']}/objects-{game['objects']}/quest-{game['quest_length']}"

    def answer_key(self, task: TaskInstance) -> str:
        return authoring.answer_key(task)

    def verify(self, output: str, task: TaskInstance) -> Verdict:
        return replay(output, self.game(task), self.max_turns)

    def benchmark_texts(self, benchmarks_dir: str) -> Iterable[str]:
        return ()

    def benchmark_sets(self, benchmarks_dir: str) -> dict[str, str | None]:
        return {}
