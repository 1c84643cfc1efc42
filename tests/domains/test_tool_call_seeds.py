"""Invariants of the shipped seed set: size, siblings, self-consistency, and no benchmark overlap."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from genenv.config import GenEnvConfig
from genenv.curriculum.pools import is_heldout
from genenv.domains.base import ValidationContext, get_domain
from genenv.domains.decontamination import BenchmarkIndex
from genenv.domains.tool_call.calls import Call, parse_calls
from genenv.domains.tool_call.make_seeds import SEEDS_PATH, build_seeds
from genenv.domains.tool_call.schema import SCHEMA_TYPES, schema_error

BASE_SEEDS = 306
DOMAIN = get_domain("tool_call")
SEEDS = DOMAIN.load_seeds()


def test_shipped_file_is_what_make_seeds_writes() -> None:
    rows = [json.loads(line) for line in SEEDS_PATH.read_text(encoding="utf-8").splitlines()]
    assert rows == build_seeds()


def test_size_and_mix() -> None:
    """The base mix: the seeds before the held-out extension."""
    base = SEEDS[:BASE_SEEDS]
    calls = [parse_calls(seed.answer) for seed in base]
    called = Counter(call.name for seed_calls in calls for call in seed_calls)
    offered = {f["name"] for seed in base for f in seed.spec["functions"]}
    assert len(base) >= 220
    assert len(offered) >= 45
    assert set(called) == offered
    assert min(called.values()) >= 4
    multi = sum(len(seed.spec["functions"]) > 1 for seed in base) / len(base)
    parallel = sum(len(c) > 1 for c in calls) / len(base)
    assert 0.25 <= multi <= 0.4
    assert 0.03 <= parallel <= 0.08


def test_about_a_tenth_of_the_seeds_teach_abstention() -> None:
    """BFCL's irrelevance category needs `[]` when no offered function fits: a request for another group's function."""
    abstentions = [seed for seed in SEEDS if seed.answer == "[]"]
    assert len(SEEDS) == 500 and len(abstentions) == 31 + 20  # one in ten of the held-out extension
    offered = Counter(len(seed.spec["functions"]) for seed in abstentions)
    assert offered[1] >= 10 and offered[2] + offered[3] >= 10
    for seed in abstentions:
        assert DOMAIN.verify("[]", seed).reward == 1.0
        assert DOMAIN.verify("None of these functions can help with that.", seed).reward == 1.0
        function = seed.spec["functions"][0]
        call = f"[{function['name']}({', '.join(f'{p}=1' for p in function['parameters']['required'])})]"
        assert DOMAIN.verify(call, seed).reward == 0.0


def test_held_out_families_get_extension_seeds_and_the_base_seeds_stay_as_they_were() -> None:
    """194 more seeds for the held-out families make the held-out measure 270 items (one item ~0.4 points, not 1.3),
    from their own random stream: the seeds before them are those of the base mix, unchanged."""
    extension = SEEDS[BASE_SEEDS:]
    assert len(extension) == 194 and all(is_heldout(s.family, GenEnvConfig.heldout_fraction) for s in extension)
    assert sum(is_heldout(s.family, GenEnvConfig.heldout_fraction) for s in SEEDS) == 270
    assert 0.08 <= sum(s.answer == "[]" for s in extension) / len(extension) <= 0.12
    rows = build_seeds()
    assert [r["question"] for r in rows[:BASE_SEEDS]] == [s.spec["question"] for s in SEEDS[:BASE_SEEDS]]
    base_answers = {DOMAIN.answer_key(s) for s in SEEDS[:BASE_SEEDS]} - {"[]"}
    assert not base_answers & {DOMAIN.answer_key(s) for s in extension}


def test_every_family_has_siblings() -> None:
    families = Counter(seed.family for seed in SEEDS)
    assert min(families.values()) >= 2
    for seed in SEEDS:
        assert seed.family == "+".join(sorted(f["name"] for f in seed.spec["functions"]))


def test_ids_and_dedup_keys_are_unique() -> None:
    assert [seed.task_id for seed in SEEDS] == [f"tc-{i:04d}" for i in range(1, len(SEEDS) + 1)]
    assert len({DOMAIN.dedup_key(seed) for seed in SEEDS}) == len(SEEDS)


def test_schemas_are_well_formed() -> None:
    schemas = {f["name"]: f for seed in SEEDS for f in seed.spec["functions"]}
    for name, schema in schemas.items():
        assert re.fullmatch(r"[a-z_]+(\.[a-z_]+)*", name)
        parameters = schema["parameters"]
        assert parameters["type"] == "dict"
        assert set(parameters["required"]) <= set(parameters["properties"])
        for spec in parameters["properties"].values():
            assert spec["type"] in SCHEMA_TYPES and spec["description"]
            if "default" in spec:
                alone = {"name": name, "parameters": {"type": "dict", "properties": {"p": spec}, "required": []}}
                assert schema_error([Call(name, {"p": spec["default"]})], [alone]) is None, name


def test_every_seed_validates_and_solves_itself() -> None:
    """The calibration of the answer check: every shipped seed, written out as the simulator would write it, passes
    the whole validation (grounding, function fit, enum naming included), so the check rejects no seed."""
    rejected = {}
    for seed in SEEDS:
        candidate = DOMAIN.parse_candidate(DOMAIN.simulator_target(seed), seed, seed.task_id, False)
        assert candidate.task == seed
        reason = DOMAIN.validate(candidate, ValidationContext()).reject_reason
        if reason is not None:
            rejected[seed.task_id] = reason
        assert DOMAIN.verify(seed.answer, seed).reward == 1.0
    assert rejected == {}


def test_no_seed_overlaps_the_benchmarks(benchmark_index: BenchmarkIndex, benchmark_dir: Path) -> None:
    overlapping = [seed.spec["question"] for seed in SEEDS if benchmark_index.contains(seed.spec["question"])]
    assert overlapping == []
    benchmark_names = {
        function["name"]
        for path in (benchmark_dir / "bfcl").glob("*.json")
        for line in path.read_text(encoding="utf-8").splitlines()
        for function in json.loads(line)["function"]
    }
    assert benchmark_names.isdisjoint(f["name"] for seed in SEEDS for f in seed.spec["functions"])
