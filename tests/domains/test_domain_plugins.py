"""A domain from its own installed package: declared in the entry-point group genenv.domains, selectable by name
from a config with no edit to genenv, decontaminated against its own benchmark texts; a broken one is named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PYPROJECT = """\
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "genenv-echo"
version = "0.1.0"

[project.entry-points."genenv.domains"]
echo = "genenv_echo:factory"
broken_echo = "genenv_echo:no_such_factory"

[tool.setuptools]
py-modules = ["genenv_echo"]
"""

MODULE = '''\
"""The agent repeats a word: the smallest domain, every method of the Domain protocol."""

from genenv.domains.base import Candidate, Domain, TaskInstance, Verdict


def _task(task_id, word):
    return TaskInstance(task_id, {"question": f"Say {word}."}, word, family=word)


class Echo(Domain):
    name = "echo"

    def load_seeds(self):
        return [_task(f"echo/{word}", word) for word in ("red", "green", "blue")]

    def agent_messages(self, task):
        return [{"role": "user", "content": task.spec["question"]}]

    def simulator_messages(self, seed, success_rate, alpha=0.5, k_min=0.1):
        return [{"role": "user", "content": f"Write a word like {seed.answer}."}]

    def simulator_target(self, task):
        return task.answer

    def parse_candidate(self, raw, seed, task_id, truncated):
        word = raw.strip()
        return Candidate(raw, _task(task_id, word)) if word.isalpha() else Candidate(raw, None, "not_a_word")

    def validate(self, candidate, context):
        return candidate

    def dedup_key(self, task):
        return task.answer

    def sibling_key(self, task):
        return task.family

    def answer_key(self, task):
        return task.answer

    def verify(self, output, task):
        return Verdict(float(output.strip() == task.answer), output.strip())

    def demonstrations(self, task):
        return [(self.agent_messages(task), task.answer)]

    def difficulty(self, task):
        return float(len(task.answer))

    def benchmark_texts(self, benchmarks_dir):
        return ["Say purple."]

    def benchmark_sets(self, benchmarks_dir):
        return {"echo-bench": None}


def factory(config):
    return Echo()
'''

PROBE = """
from genenv.config import GenEnvConfig
from genenv.domains.base import get_domain
from genenv.domains.decontamination import domain_index
from genenv.validation import validate
from genenv.registry import PluginError

config = validate(GenEnvConfig(domain="echo"))
domain = get_domain(config.domain, config)
seed = domain.load_seeds()[0]
print(type(domain).__module__, domain.name, domain.verify(seed.answer, seed).reward)
print(domain_index(domain, config.benchmarks_dir).contains("Say purple."))
try:
    validate(GenEnvConfig(domain="broken_echo"))
except PluginError as broken:
    print(broken)
"""


def _probe(cwd: Path, site: Path | None) -> subprocess.CompletedProcess:
    """This venv's Python, with the plug-in's install folder on its path or not."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONSAFEPATH": "1"}
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return subprocess.run([sys.executable, "-c", PROBE], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_an_installed_package_adds_a_domain_by_entry_point(tmp_path: Path) -> None:
    source, site = tmp_path / "genenv-echo", tmp_path / "site-packages"
    source.mkdir()
    (source / "pyproject.toml").write_text(PYPROJECT)
    (source / "genenv_echo.py").write_text(MODULE)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", site, source],
        check=True,
        capture_output=True,
    )

    installed = _probe(tmp_path, site)
    assert installed.returncode == 0, installed.stderr
    lines = installed.stdout.splitlines()
    assert lines[:2] == ["genenv_echo echo 1.0", "True"]
    assert lines[2].startswith(
        "domain 'broken_echo': entry point 'broken_echo = genenv_echo:no_such_factory' "
        "(group genenv.domains, from genenv-echo 0.1.0) failed to load: AttributeError"
    )

    not_installed = _probe(tmp_path, None)
    assert not_installed.returncode != 0
    refused = not_installed.stderr.strip().splitlines()[-1]
    known, _, got = refused.partition(" (got ")
    assert known.startswith("genenv.config.ConfigError: domain: must be one of [") and "'echo'" not in known
    assert got == "'echo')", refused
