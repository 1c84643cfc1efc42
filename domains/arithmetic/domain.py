"""Arithmetic word problems with an integer answer, docs/domains.md's worked example. The simulator writes a problem
and the arithmetic that solves it; the domain computes the answer from that arithmetic (parsed by `ast`, evaluated
over integers, never executed). The agent ends with "Answer: <integer>"; R_agent is 1 for the exact integer."""

import ast
import json
import operator
import re
from importlib import resources

from genenv.config import GenEnvConfig
from genenv.domains.base import (
    Candidate,
    DifficultyWords,
    Messages,
    TaskInstance,
    ValidationContext,
    Verdict,
    difficulty_hint,
)
from genenv.domains.scoring import normalize_answer

OPERATORS = {
    ast.Add: ("+", operator.add), ast.Sub: ("-", operator.sub), ast.Mult: ("*", operator.mul),
    ast.Div: ("/", operator.floordiv),  # only where it divides exactly: every step stays an integer
}  # fmt: skip
MAX_OPERATIONS, MAX_VALUE, MAX_RAW_CHARS = 4, 1_000_000, 600
SIMULATOR_SYSTEM = (
    "You write arithmetic word problems for a student. Reply with two lines:\n"
    "Problem: <the word problem, stating every number it needs in digits>\n"
    "Expression: <the arithmetic that solves it, with + - * / and parentheses>"
)
AGENT_SYSTEM = "Solve the word problem. Show your working briefly, then end with: Answer: <integer>"
WORDS = DifficultyWords("problems", "solves", "Make it harder: more steps.", "Make it easier: fewer steps.")
_LINE = re.compile(r"^\s*(Problem|Expression)\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_ANSWER = re.compile(r"Answer\s*:\s*(-?[\d,]*\d(?:\.\d+)?)", re.IGNORECASE)


def evaluate(expression: str) -> tuple[int, str]:
    """The integer value of `expression` and its operators in order, or ValueError(reason kept with the output)."""
    try:
        tree = ast.parse(expression, mode="eval").body
    except (SyntaxError, ValueError):
        raise ValueError("bad_expression") from None
    symbols: list[str] = []

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            left, right = value(node.left), value(node.right)
            symbol, apply = OPERATORS[type(node.op)]
            symbols.append(symbol)
            if symbol == "/" and (right == 0 or left % right):
                raise ValueError("not_an_integer")
            return apply(left, right)
        raise ValueError("bad_expression")

    result = value(tree)
    if not 1 <= len(symbols) <= MAX_OPERATIONS or abs(result) > MAX_VALUE:
        raise ValueError("bad_expression")
    return result, "".join(symbols)


def make_task(task_id: str, problem: str, expression: str) -> TaskInstance:
    answer, symbols = evaluate(expression)
    spec = {"question": problem, "expression": expression}
    return TaskInstance(task_id, spec, str(answer), family=f"ops-{''.join(sorted(set(symbols)))}")


class ArithmeticDomain:
    name = "arithmetic"

    def load_seeds(self) -> list[TaskInstance]:
        text = resources.files("genenv.domains.arithmetic").joinpath("data/seeds.jsonl").read_text(encoding="utf-8")
        rows = [json.loads(line) for line in text.splitlines()]
        return [make_task(row["seed_id"], row["problem"], row["expression"]) for row in rows]

    def agent_messages(self, task: TaskInstance) -> Messages:
        return [{"role": "system", "content": AGENT_SYSTEM}, {"role": "user", "content": task.spec["question"]}]

    def simulator_messages(
        self, seed: TaskInstance, success_rate: float | None, alpha: float = 0.5, k_min: float = 0.1
    ) -> Messages:
        user = (
            f"Example:\n{self.simulator_target(seed)}\n{difficulty_hint(success_rate, alpha, k_min, WORDS)}\n"
            "Write ONE new problem in the same two-line form."
        )
        return [{"role": "system", "content": SIMULATOR_SYSTEM}, {"role": "user", "content": user}]

    def simulator_target(self, task: TaskInstance) -> str:
        return f"Problem: {task.spec['question']}\nExpression: {task.spec['expression']}"

    def parse_candidate(self, raw: str, seed: TaskInstance, task_id: str, truncated: bool) -> Candidate:
        if not raw.strip() or len(raw) > MAX_RAW_CHARS:
            return Candidate(raw, None, "empty" if not raw.strip() else "too_long")
        lines = {key.lower(): text for key, text in _LINE.findall(raw)}
        for part in ("problem", "expression"):
            if part not in lines:
                return Candidate(raw, None, "truncated" if truncated else f"missing_{part}")
        try:
            return Candidate(raw, make_task(task_id, lines["problem"], lines["expression"]))
        except ValueError as rejected:
            return Candidate(raw, None, rejected.args[0])

    def validate(self, candidate: Candidate, context: ValidationContext) -> Candidate:
        task = candidate.task
        if task is None or candidate.reject_reason is not None:
            return candidate
        if not set(re.findall(r"\d+", task.spec["expression"])) <= set(re.findall(r"\d+", task.spec["question"])):
            return Candidate(candidate.raw, task, "number_not_in_problem")
        if self.answer_key(task) in context.heldout_calls:
            return Candidate(candidate.raw, task, "heldout_overlap")
        if self.dedup_key(task) in context.seen_keys:
            return Candidate(candidate.raw, task, "duplicate")
        return candidate

    def dedup_key(self, task: TaskInstance) -> str:
        return normalize_answer(task.spec["question"])

    def sibling_key(self, task: TaskInstance) -> str:
        return task.family

    def answer_key(self, task: TaskInstance) -> str:
        """The family: the simulator can cross families (write a subtraction from an addition), so a generated
        problem with a held-out family's operations is that family's sibling, kept out of training."""
        return task.family

    def verify(self, output: str, task: TaskInstance) -> Verdict:
        answers = _ANSWER.findall(output)
        if not answers:
            return Verdict(0.0, None, "no 'Answer: <integer>' line")
        return Verdict(float(float(answers[-1].replace(",", "")) == int(task.answer)), answers[-1])

    def demonstrations(self, task: TaskInstance) -> list[tuple[Messages, str]]:
        return [(self.agent_messages(task), f"{task.spec['expression']} = {task.answer}\nAnswer: {task.answer}")]

    def difficulty(self, task: TaskInstance) -> float:
        return float(len(evaluate(task.spec["expression"])[1]))

    def benchmark_texts(self, benchmarks_dir: str) -> tuple[str, ...]:
        return ()

    def benchmark_sets(self, benchmarks_dir: str) -> dict[str, str | None]:
        return {}


def arithmetic_domain(config: GenEnvConfig) -> ArithmeticDomain:
    return ArithmeticDomain()
