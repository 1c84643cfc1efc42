"""The agent's side of text games: an episode as the conversation the agent continues one command at a time, and
R_agent from replaying its commands (the game is deterministic, so the replay is the verifier).

Each turn the agent sees the game's answer (and, if configured, the commands the game accepts there) and writes
one command; the episode ends on a win, a loss or the turn budget. Only the agent's words carry loss
(models/conversation.py); the k episodes of one game form its GRPO group.
"""

from __future__ import annotations

from genenv.domains.base import Messages, Verdict
from genenv.domains.text_game.engine import CompiledGame, GameSession, Observation, play

AGENT_SYSTEM = (
    "You are playing a text adventure game. Read the goal and what you see, then answer with exactly one command, "
    "such as: go north, open door, take key from chest, unlock chest with key. Reply with the command only."
)
MAX_COMMAND_CHARS = 80


def command_of(completion: str) -> str:
    """The command in an agent's reply: its first non-empty line, without quotes or a final full stop."""
    line = next((line.strip() for line in completion.splitlines() if line.strip()), "")
    return line.strip("`\"'").rstrip(".!").strip().lower()[:MAX_COMMAND_CHARS]


def _user_turn(observation: Observation, show_admissible: bool) -> str:
    if not show_admissible or not observation.admissible:
        return observation.text
    return f"{observation.text}\n\nCommands you can use here: {', '.join(observation.admissible)}"


class TextGameEpisode:
    """One game in play, advanced by the caller with the agent's reply each turn."""

    def __init__(self, game: CompiledGame, max_turns: int, show_admissible: bool) -> None:
        self._session = GameSession(game)
        self.max_turns = max_turns
        self.show_admissible = show_admissible
        self._messages: Messages = [
            {"role": "system", "content": AGENT_SYSTEM},
            {"role": "user", "content": _user_turn(self._session.start, show_admissible)},
        ]

    @property
    def done(self) -> bool:
        return self._session.observation.done or len(self._session.turns) >= self.max_turns

    @property
    def won(self) -> bool:
        return self._session.observation.won

    @property
    def ended_by_game(self) -> bool:
        """Won or lost, rather than cut off by the turn budget."""
        return self._session.observation.done

    def messages(self) -> Messages:
        """The conversation so far, ending with the game's latest answer: the agent's next prompt."""
        return list(self._messages)

    def step(self, reply: str) -> None:
        observation = self._session.step(command_of(reply))
        self._messages.append({"role": "assistant", "content": reply.strip()})
        if not self.done:
            self._messages.append({"role": "user", "content": _user_turn(observation, self.show_admissible)})

    def transcript(self) -> str:
        """The commands played, one per line: what `replay` verifies."""
        return "\n".join(turn.command for turn in self._session.turns)

    def close(self) -> None:
        self._session.close()


def replay(transcript: str, game: CompiledGame, max_turns: int) -> Verdict:
    """R_agent = 1 when the commands win the game within `max_turns`, else 0; with every turn as replayed."""
    commands = [line for line in transcript.splitlines() if line.strip()][:max_turns]
    if not commands:
        return Verdict(reward=0.0, parsed_action=None, parse_error="no_command")
    result = play(game, lambda observation, turns: commands[len(turns)], max_steps=len(commands))
    turns = tuple(
        {
            "turn": index,
            "command": turn.command,
            "observation": turn.observation.text,
            "won": turn.observation.won,
            "lost": turn.observation.lost,
        }
        for index, turn in enumerate(result.turns, start=1)
    )
    return Verdict(reward=1.0 if result.won else 0.0, parsed_action="\n".join(commands), turns=turns)
