"""`genenv check-domain`: the checks a domain author runs, shipped in the package. On the built-in domains, and on
an outside package built from docs/domains.md's own pyproject.toml in a scratch folder (a unit-conversion domain):
it passes, lists its held-out families, refuses a split that holds out none, and names a hand-written seed whose answer
is wrong."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from genenv.cli import main

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "domains.md"

UNITS = '''\
"""Unit conversions: "Convert 3 km to m." -> "3000". Families are the unit pairs."""

import json
from importlib import resources

from genenv.domains.base import Candidate, DifficultyWords, TaskInstance, Verdict, difficulty_hint

FACTORS = {("km", "m"): 1000, ("m", "cm"): 100, ("kg", "g"): 1000, ("h", "min"): 60, ("min", "s"): 60}
WORDS = DifficultyWords("conversions", "solves", "Use larger numbers.", "Use smaller numbers.")


def task(task_id, value, source, target, answer=None):
    answer = str(value * FACTORS[source, target]) if answer is None else answer
    spec = {"question": f"Convert {value} {source} to {target}.", "value": value, "from": source, "to": target}
    return TaskInstance(task_id, spec, answer, family=f"{source}-{target}")


class Units:
    name = "units"

    def load_seeds(self):
        lines = resources.files("genenv_units").joinpath("data/seeds.jsonl").read_text().splitlines()
        return [task(**json.loads(line)) for line in lines]

    def agent_messages(self, t):
        return [{"role": "user", "content": t.spec["question"] + " Reply with the number only."}]

    def simulator_messages(self, seed, success_rate, alpha=0.5, k_min=0.1):
        hint = difficulty_hint(success_rate, alpha, k_min, WORDS)
        return [{"role": "user", "content": f"Write a conversion like: {self.simulator_target(seed)} {hint}"}]

    def simulator_target(self, t):
        return f"{t.spec['value']} {t.spec['from']} {t.spec['to']}"

    def parse_candidate(self, raw, seed, task_id, truncated):
        parts = raw.split()
        if len(parts) != 3 or not parts[0].isdigit() or (parts[1], parts[2]) not in FACTORS:
            return Candidate(raw, None, "truncated" if truncated else "bad_format")
        return Candidate(raw, task(task_id, int(parts[0]), parts[1], parts[2]))

    def validate(self, candidate, context):
        key = self.dedup_key(candidate.task)
        return Candidate(candidate.raw, candidate.task, "duplicate") if key in context.seen_keys else candidate

    def dedup_key(self, t):
        return t.spec["question"]

    def sibling_key(self, t):
        return t.family

    def answer_key(self, t):
        return t.family

    def verify(self, output, t):
        return Verdict(float(output.strip() == t.answer), output.strip())

    def demonstrations(self, t):
        return [(self.agent_messages(t), t.answer)]

    def difficulty(self, t):
        return float(len(str(t.spec["value"])))

    def benchmark_texts(self, benchmarks_dir):
        return ()

    def benchmark_sets(self, benchmarks_dir):
        return {}


def units_domain(config):
    return Units()
'''


def _seeds(wrong_answer: bool = False) -> str:
    rows = [
        {"task_id": f"units/{source}-{target}/{value}", "value": value, "source": source, "target": target}
        for source, target in (("km", "m"), ("m", "cm"), ("kg", "g"), ("h", "min"), ("min", "s"))
        for value in (2, 3, 7)
    ]
    if wrong_answer:
        rows[4]["answer"] = "1"  # units/m-cm/3 is not 1 cm
    return "".join(json.dumps(row) + "\n" for row in rows)


def _pyproject_from_the_docs() -> str:
    text = DOCS.read_text(encoding="utf-8")
    block = re.search(r"<!-- outside-package-pyproject .*?-->\n```toml\n(.*?)```", text, re.DOTALL)
    assert block, "docs/domains.md lost its outside package's pyproject.toml"
    return block.group(1)


def _installed(root: Path, seeds: str) -> Path:
    """The outside package, laid out as the docs say, installed (without dependencies) into a target folder."""
    source = root / "genenv-units"
    (source / "genenv_units" / "data").mkdir(parents=True)
    (source / "pyproject.toml").write_text(_pyproject_from_the_docs())
    (source / "genenv_units" / "__init__.py").write_text("")
    (source / "genenv_units" / "domain.py").write_text(UNITS)
    (source / "genenv_units" / "data" / "seeds.jsonl").write_text(seeds)
    target = root / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", target, source],
        check=True,
        capture_output=True,
    )
    return target


def _check(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    command = [sys.executable, "-m", "genenv.cli", "check-domain", "units", *args]
    return subprocess.run(command, env=env, cwd=site.parent, capture_output=True, text=True, timeout=300)


def test_the_docs_sample_is_what_the_arithmetic_domain_prints(capsys) -> None:
    assert main(["check-domain", "arithmetic"]) == 0
    printed = capsys.readouterr().out
    sample = re.search(r"\$ genenv check-domain arithmetic\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.DOTALL)
    assert sample and printed == sample.group(1)


@pytest.mark.parametrize("name", ["tool_call", pytest.param("text_game", marks=pytest.mark.slow)])
def test_the_built_in_domains_pass_every_check(name: str, capsys) -> None:
    assert main(["check-domain", name]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith(f"{name}: every check passed")
    assert len(re.findall(r": ok \(\d+\)", out)) == 5


def test_families_lists_the_split_and_refuses_one_that_holds_out_none(capsys) -> None:
    assert main(["check-domain", "arithmetic", "--families"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("held out at heldout_fraction 0.2 (2 of 13 families):\n  ops-+-\n  ops--\ntrained on (11):")
    assert main(["check-domain", "arithmetic", "--families", "--set", "heldout_fraction=0"]) == 2
    assert "no family is held out at heldout_fraction 0.0" in capsys.readouterr().err


def test_an_outside_package_built_from_the_docs_is_checked(tmp_path: Path) -> None:
    site = _installed(tmp_path / "good", _seeds())
    passed = _check(site)
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.splitlines()[1:4] == [
        "round trip through the simulator's format: ok (15)",
        "the domain's own validation: ok (15)",
        "worked example scores 1: ok (15)",
    ]
    families = _check(site, "--families")
    assert families.returncode == 0, families.stderr
    held = families.stdout.split("trained on")[0].splitlines()[1:]
    assert held and len(held) < 5  # some of the five unit pairs held out, not all
    refused = _check(site, "--families", "--set", "heldout_fraction=0")
    assert refused.returncode == 2 and "no family is held out" in refused.stderr

    broken = _check(_installed(tmp_path / "broken", _seeds(wrong_answer=True)))
    assert broken.returncode == 2
    wrong = (
        "round trip through the simulator's format: FAILED for 1 of 15: units/m-cm/3: comes back with another answer"
    )
    assert wrong in broken.stdout.splitlines()
    assert broken.stderr.strip() == "genenv: check-domain: units failed round trip through the simulator's format"
