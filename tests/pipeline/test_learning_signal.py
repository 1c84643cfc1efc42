"""The stage-level parts of the learning signal, on a real warehouse and without models: what the simulator is
told, which seeds are held out, which adapters the KL terms are anchored to, how answers and repeats are scored."""

import json

import polars as pl
import pytest

from genenv.config import GenEnvConfig
from genenv.domains.base import REPEAT, Candidate, ValidationContext, get_domain
from genenv.pipeline.adapter_lineage import reference_checkpoints
from genenv.pipeline.context import GenerationRef, earlier_sampled_answers, load_tasks
from genenv.pipeline.run_records import register_run
from genenv.runtime.handle import ModelRuntime
from genenv.tasks.answers import judge
from genenv.tasks.generate import family_success_rates, recent_success_rate, repeat_of_this_generation
from genenv.tasks.rewards import shared_verdicts
from genenv.tasks.seed import seed_pool
from genenv.warehouse.store import Warehouse


def _run(tmp_path, **settings) -> GenerationRef:
    config = GenEnvConfig(data_dir=str(tmp_path), **settings)
    warehouse = Warehouse(config.resolved_warehouse_uri)
    register_run(warehouse, config, "r1")
    return GenerationRef(config.resolved_warehouse_uri, "r1", 0, ModelRuntime())


def _commit(ref: GenerationRef, generation: int, metrics: dict) -> None:
    ref.warehouse.commit_generation(
        ref.run_id,
        generation,
        agent_checkpoint=f"ckpt/g{generation}/agent",
        simulator_checkpoint=f"ckpt/g{generation}/simulator",
        config_hash="h",
        seed=0,
        metrics=metrics,
    )


def test_generation_one_tells_the_simulator_the_held_out_success_of_the_warm_start(tmp_path):
    ref = _run(tmp_path)
    _commit(ref, 0, {"fresh_success": None, "heldout_success": 0.34})
    assert recent_success_rate(GenerationRef(ref.warehouse_uri, ref.run_id, 1, ModelRuntime())) == 0.34
    _commit(ref, 1, {"fresh_success": 0.5, "heldout_success": 0.4})
    assert recent_success_rate(GenerationRef(ref.warehouse_uri, ref.run_id, 2, ModelRuntime())) == 0.5


def test_the_seed_stage_holds_out_whole_function_families(tmp_path):
    ref = _run(tmp_path, heldout_fraction=0.2)
    seed_pool.fn(ref)
    seeds = ref.warehouse.read("tasks", run_id="r1", generation=0)
    train = ref.warehouse.read("pool", run_id="r1", pool="train")["task_id"]
    heldout_families = set(seeds.filter(pl.col("heldout"))["family"])
    train_families = set(seeds.filter(pl.col("task_id").is_in(train.to_list()))["family"])
    assert heldout_families and train_families
    assert not heldout_families & train_families
    assert 0.1 < len(heldout_families) / seeds["family"].n_unique() < 0.3  # a fifth of the families
    assert seeds.filter(pl.col("heldout")).height >= 250  # each with its extension seeds (make_seeds.py)


@pytest.mark.parametrize("warm_start", [True, False])
def test_the_kl_reference_is_the_warm_started_adapter_or_the_base_without_warm_start(tmp_path, warm_start):
    ref = _run(tmp_path, warm_start=warm_start)
    _commit(ref, 0, {})
    _commit(ref, 1, {})
    later = GenerationRef(ref.warehouse_uri, ref.run_id, 2, ModelRuntime())
    expected = ("ckpt/g0/agent", "ckpt/g0/simulator") if warm_start else (None, None)
    assert reference_checkpoints(later) == expected
    assert reference_checkpoints(ref) == (None, None)


def test_a_stored_config_with_a_retired_field_still_loads(tmp_path):
    from genenv.config import ConfigError, config_from_dict

    stored = json.loads(json.dumps(GenEnvConfig().to_dict()))
    stored["agent_steps"] = 1
    assert config_from_dict(stored) == GenEnvConfig()
    stored["no_such_field"] = 1
    with pytest.raises(ConfigError, match="no_such_field: unknown config field"):
        config_from_dict(stored)


def test_the_replay_anchor_draws_gold_training_tasks_a_quarter_of_them_abstentions(tmp_path):
    from genenv.tasks.finetune import replay_tasks

    ref = _run(tmp_path, heldout_fraction=0.2, agent_replay_rows=16)
    seed_pool.fn(ref)
    later = GenerationRef(ref.warehouse_uri, ref.run_id, 1, ModelRuntime())
    chosen = replay_tasks(later)
    train = set(ref.warehouse.read("pool", run_id="r1", pool="train")["task_id"])
    assert len(chosen) == 16 and {t.task_id for t in chosen} <= train  # gold answers of D_train only
    assert sum(t.answer == "[]" for t in chosen) == 4  # 31 of 229 training seeds abstain; the replay holds a quarter
    assert [t.task_id for t in replay_tasks(later)] == [t.task_id for t in chosen]
    assert replay_tasks(_run(tmp_path / "off", heldout_fraction=0.2)) == []


def test_an_answer_cut_off_at_the_token_cap_scores_zero_on_every_kind_of_task():
    """Before, text that does not decode as a call scored 1 on an abstention task even when cut off mid-call, so the
    cap rewarded short answers; now the cap costs the same on both kinds."""
    domain = get_domain("tool_call")
    seeds = domain.load_seeds()
    abstention = next(s for s in seeds if domain.is_abstention(s))
    call = next(s for s in seeds if not domain.is_abstention(s))
    cut = call.answer[: len(call.answer) // 2]
    assert judge(domain, abstention, cut, finished=True).reward == 1.0
    assert judge(domain, abstention, cut, finished=False).reward == 0.0
    assert judge(domain, call, call.answer, finished=True).reward == 1.0
    assert judge(domain, call, call.answer, finished=False).reward == 0.0


def test_a_repeat_of_this_generation_shares_its_verdict_and_a_repeat_of_an_earlier_one_is_a_duplicate(tmp_path):
    ref = _run(tmp_path)
    domain = ref.domain
    seed = next(s for s in domain.load_seeds() if not domain.is_abstention(s))
    written: set[str] = set()
    first = repeat_of_this_generation(domain, Candidate("raw", seed), written)
    again = repeat_of_this_generation(domain, Candidate("raw", seed), written)
    assert first.valid and again.reject_reason == REPEAT
    earlier = domain.validate(Candidate("raw", seed), ValidationContext(seen_keys=written))
    assert earlier.reject_reason == "duplicate"
    row = {"spec_json": json.dumps(seed.spec), "answer": seed.answer, "family": seed.family}
    per_task = pl.DataFrame(
        [
            {"task_id": "b0/v0", **row, "valid": True, "reject_reason": None, "success": 0.75},
            {"task_id": "b0/v1", **row, "valid": False, "reject_reason": REPEAT, "success": None},
            {"task_id": "b0/v2", **row, "valid": False, "reject_reason": "empty", "success": None},
        ]
    )
    shared = shared_verdicts(ref, per_task).sort("task_id")
    assert shared["scored"].to_list() == [True, True, False]
    assert shared["success"].to_list() == [0.75, 0.75, None]
    assert shared["valid"].to_list() == [True, False, False]  # only the first joins the pools


def test_each_seed_is_told_its_own_familys_success(tmp_path):
    """The latest FAMILY_HINT_ROLLOUTS sampled rollouts of a family make its hint; a family with fewer than a quarter
    of that many has none (the run-wide rate stands in)."""
    ref = _run(tmp_path)
    seed_pool.fn(ref)
    known = load_tasks(ref)
    by_family: dict[str, list] = {}
    for task in known.values():
        by_family.setdefault(task.family, []).append(task)
    busy, rare = sorted(by_family)[:2]
    rows = []
    for generation, solved in ((1, [True] * 16), (2, [False] * 8)):
        rows += [
            trajectory(ref.run_id, generation, by_family[busy][0].task_id, "pool", i, value)
            for i, value in enumerate(solved)
        ]
    rows.append(trajectory(ref.run_id, 2, by_family[rare][0].task_id, "fresh", 0, True))
    ref.warehouse.append("trajectories", rows)
    later = GenerationRef(ref.warehouse_uri, ref.run_id, 3, ModelRuntime())
    rates = family_success_rates(earlier_sampled_answers(later), known)
    assert rates == {busy: 0.5}  # 8 failures of generation 2, then the latest 8 of generation 1's 16 successes
    second = GenerationRef(ref.warehouse_uri, ref.run_id, 2, ModelRuntime())
    assert family_success_rates(earlier_sampled_answers(second), known) == {busy: 1.0}


def trajectory(run_id: str, generation: int, task_id: str, purpose: str, index: int, solved: bool) -> dict:
    return {
        "run_id": run_id,
        "generation": generation,
        "trajectory_id": f"{run_id}/g{generation}/{purpose}/{task_id}/{index}",
        "task_id": task_id,
        "purpose": purpose,
        "sample_index": index,
        "completion": "[]",
        "finished": True,
        "prompt_tokens": 1,
        "completion_tokens": 1,
        "parsed_action": "[]",
        "parse_error": None,
        "reward": float(solved),
        "solved": solved,
        "prompt_ids": [1],
        "completion_ids": [2],
        "completion_mask": None,
    }


@pytest.mark.parametrize("confirm", [0, 3])
def test_fresh_tasks_near_alpha_get_more_rollouts_numbered_after_their_first(tmp_path, tiny_model_dir, confirm):
    """p_hat_confirm_rollouts: a fresh task whose first p̂ lies within p_hat_confirm_margin of α is answered again
    (outside its GRPO group), so the rewards stage reads p̂ over all its answers; a task far from α is not."""
    from genenv.models.policy import LoraSettings, PolicyPair
    from genenv.models.transformers_backend import TransformersBackend
    from genenv.tasks.agent_groups import groups_of
    from genenv.tasks.answers import ANSWER_SCHEMA
    from genenv.tasks.rollout import confirming

    ref = _run(
        tmp_path,
        domain="arithmetic",
        model=str(tiny_model_dir),
        p_hat_rollouts=4,
        rollouts_per_task=2,
        p_hat_confirm_rollouts=confirm,
        p_hat_confirm_margin=0.25,
    )
    seeds = get_domain("arithmetic").load_seeds()[:3]
    solved_of = {seeds[0].task_id: 2, seeds[1].task_id: 4, seeds[2].task_id: 1}  # p̂ 0.5, 1.0, 0.25
    first = pl.DataFrame(
        [
            {
                "task_id": t.task_id,
                "purpose": "fresh",
                "sample_index": k,
                "finished": True,
                "completion": f"Answer: {t.answer if k < solved_of[t.task_id] else 'x'}",
                "prompt_ids": [1],
                "completion_ids": [2],
                "completion_mask": None,
                "reward": float(k < solved_of[t.task_id]),
                "parsed_action": None,
                "parse_error": None,
                "turns": None,
            }
            for t in seeds
            for k in range(4)
        ],
        schema=ANSWER_SCHEMA,
    )
    backend = TransformersBackend(PolicyPair.load(tiny_model_dir, LoraSettings(r=4, alpha=8)))
    known = {t.task_id: t for t in seeds}
    more = confirming(ref, backend, groups_of(ref, first, known), known)
    expected = {seeds[0].task_id, seeds[2].task_id} if confirm else set()
    assert set(more["task_id"]) == expected
    assert more.height == confirm * len(expected)
    assert set(more["sample_index"]) == set(range(4, 4 + confirm))


def test_the_agents_batch_follows_the_simulator_unless_fixed():
    """agent_call_groups: 0 keeps one call group per fresh call task plus the pool's; a number holds the batch there
    however many (or few) call tasks the simulator writes."""
    from genenv.config import GenEnvConfig
    from genenv.tasks.agent_groups import intended_calls

    assert intended_calls(GenEnvConfig(pool_tasks_per_generation=6), 40) == 46
    assert intended_calls(GenEnvConfig(pool_tasks_per_generation=6, agent_call_groups=20), 40) == 20
    assert intended_calls(GenEnvConfig(pool_tasks_per_generation=6, agent_call_groups=20), 3) == 20


def test_verify_stores_the_verdict_each_answer_was_judged_with_as_it_was_made(tmp_path):
    """R_agent is computed once, where the answer is made (dynamic sampling reads it there): verify stores the staged
    verdict and does not judge again, so the two can never disagree; rollouts staged without verdicts are redone."""
    from genenv.pipeline.contract import Rollouts, StageOutput
    from genenv.pipeline.staging import write_staged
    from genenv.tasks.answers import ANSWER_SCHEMA
    from genenv.tasks.rollout import rollouts_staged
    from genenv.tasks.verify import verify

    ref = _run(tmp_path, domain="arithmetic")
    seed_pool.fn(ref)
    task = get_domain("arithmetic").load_seeds()[0]
    g1 = GenerationRef(ref.warehouse_uri, ref.run_id, 1, ModelRuntime())
    answer = {
        "task_id": task.task_id,
        "purpose": "fresh",
        "finished": True,
        "completion": f"Answer: {task.answer}",  # right: judging it again would give 1.0
        "prompt_ids": [1],
        "completion_ids": [2],
        "completion_mask": None,
        "parsed_action": "recorded",
        "parse_error": None,
        "turns": None,
    }
    staged = pl.DataFrame(
        [{**answer, "sample_index": 0, "reward": 0.25}, {**answer, "sample_index": 1, "reward": 1.0}],
        schema=ANSWER_SCHEMA,
    )
    uri = write_staged(g1, "rollouts", staged)
    assert rollouts_staged(StageOutput(g1)) == Rollouts(g1, uri=uri)
    verify.fn(Rollouts(g1, uri=uri))
    stored = g1.warehouse.read("trajectories", run_id=ref.run_id, generation=1).sort("sample_index")
    assert stored["reward"].to_list() == [0.25, 1.0] and stored["solved"].to_list() == [False, True]
    assert set(stored["parsed_action"]) == {"recorded"}
    write_staged(g1, "rollouts", staged.drop("reward", "parsed_action", "parse_error", "turns"))
    assert rollouts_staged(StageOutput(g1)) is None


def test_the_commit_reads_the_batch_finetune_recorded_and_refuses_a_generation_without_one(tmp_path):
    """finetune records each drawn group, trained or why not; commit reads that record instead of selecting again,
    so a resumed run whose finetune was skipped reports what was trained."""
    from genenv.curriculum.pools import Group
    from genenv.tasks.agent_groups import AgentBatch, record_batch, recorded_batch
    from genenv.warehouse.purposes import Purpose

    ref = GenerationRef(_run(tmp_path).warehouse_uri, "r1", 1, ModelRuntime())
    with pytest.raises(RuntimeError, match="finetune recorded no agent batch"):
        recorded_batch(ref)
    drawn = {
        "a": Group(Purpose.FRESH, False, (1.0, 0.0, 1.0, 0.0), 0.5),
        "b": Group(Purpose.POOL, False, (1.0, 1.0, 1.0, 1.0), 1.0),
        "c": Group(Purpose.ABSTENTION, True, (0.0, 1.0, 0.0, 0.0), 0.25),
    }
    record_batch(ref, AgentBatch(drawn, ["a"], 7))
    assert recorded_batch(ref) == AgentBatch(drawn, ["a"], 7)
    from genenv.pipeline.staging import read_staged, staging_path

    why = dict(read_staged(staging_path(ref, "agent-groups")).select("task_id", "why_not").iter_rows())
    assert why == {"a": None, "b": "equal rewards", "c": "beyond the batch"}


def _env_records(ref: GenerationRef, generation: int, task_ids: list[str]) -> None:
    ref.warehouse.append(
        "pool",
        [
            {"run_id": ref.run_id, "generation": generation, "pool": "env", "task_id": t, "weight": 1.0}
            for t in task_ids
        ],
    )


def test_rescored_records_out_of_the_band_leave_rwrs_draw_and_stay_in_d_env(tmp_path):
    """simulator_pool_rescore: an earlier D_env record the agent now solves half the time trains at its new weight,
    ones it now always or rarely solves are not drawn this generation (they stay in D_env), and this generation's new
    records are drawn as they joined; without rescoring every record is drawn with the weight it joined with."""
    from genenv.curriculum.generator_rewards import CurriculumParams
    from genenv.tasks.rewards import rescore_rows
    from genenv.tasks.simulator_update import drawable_records

    ref = _run(tmp_path, simulator_update="rwr", simulator_pool_rescore=True)
    seed_pool.fn(ref)  # the records' tasks
    seeds = [t.task_id for t in get_domain(ref.config.domain).load_seeds()[:4]]
    earlier, new = seeds[:3], seeds[3]
    _env_records(ref, 1, earlier)
    _env_records(ref, 2, [new])
    solved_of = dict(zip(earlier, (4, 8, 1), strict=True))  # p̂ now 0.5, 1.0, 0.125
    ref.warehouse.append(
        "trajectories",
        [trajectory(ref.run_id, 2, t, "rescore", k, k < solved_of[t]) for t in earlier for k in range(8)],
    )
    g2 = GenerationRef(ref.warehouse_uri, ref.run_id, 2, ModelRuntime())
    config = ref.config
    rows = rescore_rows(g2, CurriculumParams(config.alpha, config.beta, config.k_min, config.rwr_lambda))
    by_task = {r["task_id"]: r for r in rows}
    assert [(by_task[t]["p_hat"], by_task[t]["in_band"], by_task[t]["n_answers"]) for t in earlier] == [
        (0.5, True, 8),
        (1.0, False, 8),
        (0.125, False, 8),
    ]
    assert by_task[earlier[0]]["rwr_weight"] == 1.0 and by_task[earlier[1]]["rwr_weight"] == 0.0
    ref.warehouse.append("rescores", rows)
    assert drawable_records(g2) == {earlier[0]: 1.0, new: 1.0}
    assert len(ref.warehouse.read("pool", run_id=ref.run_id, pool="env")) == 4  # nothing left D_env
    kept_all = _run(tmp_path / "paper", simulator_update="rwr")
    _env_records(kept_all, 1, earlier)
    _env_records(kept_all, 2, [new])
    kept_all.warehouse.append("rescores", [{**r, "run_id": kept_all.run_id} for r in rows])
    g2_paper = GenerationRef(kept_all.warehouse_uri, kept_all.run_id, 2, ModelRuntime())
    assert drawable_records(g2_paper) == dict.fromkeys([*earlier, new], 1.0)


def test_rescoring_answers_each_earlier_d_env_record_as_a_fresh_task_is(tmp_path, tiny_model_dir):
    """The rollout stage answers D_env's records of earlier generations p_hat_rollouts times each (purpose rescore,
    numbered from 0), and p_hat_confirm_rollouts more where that p̂ is near α (a margin of 1: every record); a run
    without simulator_pool_rescore answers none."""
    from genenv.models.policy import LoraSettings, PolicyPair
    from genenv.models.transformers_backend import TransformersBackend
    from genenv.tasks.rollout import rescore_candidates, rescoring

    backend = TransformersBackend(PolicyPair.load(tiny_model_dir, LoraSettings(r=4, alpha=8)))
    for rescore in (True, False):
        ref = _run(
            tmp_path / str(rescore),
            domain="arithmetic",
            model=str(tiny_model_dir),
            simulator_update="rwr",
            simulator_pool_rescore=rescore,
            p_hat_rollouts=3,
            rollouts_per_task=2,
            p_hat_confirm_rollouts=2,
            p_hat_confirm_margin=1.0,
            agent_max_new_tokens=4,
        )
        seed_pool.fn(ref)
        seeds = [t.task_id for t in get_domain("arithmetic").load_seeds()[:3]]
        _env_records(ref, 1, seeds[:2])
        _env_records(ref, 2, seeds[2:])
        g2 = GenerationRef(ref.warehouse_uri, ref.run_id, 2, ModelRuntime())
        answers = rescoring(g2, backend, load_tasks(g2))
        expected = sorted(seeds[:2]) if rescore else []
        assert rescore_candidates(g2) == expected
        assert sorted(answers["task_id"].unique()) == expected
        assert answers.height == 5 * len(expected) and set(answers["purpose"]) <= {"rescore"}
        assert set(answers["sample_index"]) == (set(range(5)) if rescore else set())


def test_rwr_waits_until_d_env_holds_simulator_min_records(tmp_path):
    """A simulator fine-tuned on one record writes that record's request for every seed (the laptop run of
    docs/results.md section 12): RWR trains only on a pool of at least simulator_min_records drawable records."""
    from genenv.tasks.simulator_update import rwr_simulator

    ref = _run(tmp_path, simulator_update="rwr", simulator_min_records=3)
    seeds = [t.task_id for t in get_domain(ref.config.domain).load_seeds()[:2]]
    _env_records(ref, 1, seeds)
    g1 = GenerationRef(ref.warehouse_uri, ref.run_id, 1, ModelRuntime())
    assert rwr_simulator(g1, policy=None) == []  # two records: the model is not touched
    fewer = _run(tmp_path / "two", simulator_update="rwr", simulator_min_records=2)
    _env_records(fewer, 1, seeds)
    with pytest.raises(KeyError, match=seeds[0]):  # two are enough: it goes on to read their tasks (none are stored)
        rwr_simulator(GenerationRef(fewer.warehouse_uri, fewer.run_id, 1, ModelRuntime()), policy=None)


@pytest.mark.parametrize("seed_draw", ["uniform", "edge"])
def test_the_edge_seed_draw_weighs_a_quarter_the_seeds_the_agent_has_outgrown(tmp_path, seed_draw):
    """simulator_seed_draw=edge: the seeds of a family the agent solved every time are drawn about a quarter as often
    as under the uniform draw; a seed of that family that the agent failed when last seen is judged by its own
    success."""
    from genenv.pipeline.context import pool_ids, subset
    from genenv.tasks.generate import draw_seeds, seed_success

    ref = _run(tmp_path, seeds_per_generation=12, simulator_seed_draw=seed_draw)
    seed_pool.fn(ref)
    known = load_tasks(ref)
    d_train = list(subset(known, pool_ids(ref, "train", 0)).values())
    by_family: dict[str, list] = {}
    for task in d_train:
        by_family.setdefault(task.family, []).append(task)
    easy = max(by_family, key=lambda family: len(by_family[family]))
    failed, *outgrown = by_family[easy]
    rows = [trajectory(ref.run_id, 1, outgrown[0].task_id, "pool", i, True) for i in range(16)]
    rows += [trajectory(ref.run_id, 0, failed.task_id, "pool", i, False) for i in range(4)]  # its family: the later 16
    ref.warehouse.append("trajectories", rows)
    answers = earlier_sampled_answers(GenerationRef(ref.warehouse_uri, ref.run_id, 2, ModelRuntime()))
    success = seed_success(answers, d_train, family_success_rates(answers, known))
    assert success == {failed.task_id: 0.0} | {task.task_id: 1.0 for task in outgrown}
    drawn = []
    for generation in range(2, 62):
        later = GenerationRef(ref.warehouse_uri, ref.run_id, generation, ModelRuntime())
        answers = earlier_sampled_answers(later)
        drawn += draw_seeds(later, d_train, answers, family_success_rates(answers, known))
    share = sum(task in outgrown for task in drawn) / len(drawn)
    uniform_share = len(outgrown) / len(d_train)
    if seed_draw == "uniform":
        assert 0.7 * uniform_share < share < 1.3 * uniform_share
    else:
        assert share < 0.45 * uniform_share  # odds a quarter: about 0.27 of the uniform share here


def _three_answered_tasks(ref: GenerationRef, written_in: int, answered_in: int) -> tuple[GenerationRef, list[dict]]:
    """Three valid simulator tasks written in generation `written_in`, answered in `answered_in` with p̂ 0.5 (in the
    α band), 0 and 0.125 (their `batches` rows); the answering generation's ref and the task rows."""
    from genenv.tasks.generate import _abstention_row

    domain = ref.domain
    seeds = [s for s in domain.load_seeds() if not domain.is_abstention(s)][:3]
    writer = GenerationRef(ref.warehouse_uri, ref.run_id, written_in, ModelRuntime())
    tasks, units = [], []
    for i, (seed, p_hat) in enumerate(zip(seeds, (0.5, 0.0, 0.125), strict=True)):
        task_id, batch_id = f"r1/g{written_in}/b{i}/v0", f"r1/g{written_in}/b{i}"
        written = _abstention_row(writer, seed, seed.task_id)  # a valid task row, made simulator's below
        tasks.append(written | {"task_id": task_id, "origin": "simulator", "batch_id": batch_id})
        units.append(
            {
                "run_id": "r1",
                "generation": answered_in,
                "batch_id": batch_id,
                "seed_task_id": seed.task_id,
                "task_id": task_id,
                "n_variations": 1,
                "n_valid": 1,
                "p_hat": p_hat,
                "reward_name": "alpha_band",
                "generator_reward": 1.0 if i == 0 else 0.0,
                "in_band": i == 0,
                "rwr_weight": 1.0 if i == 0 else 0.0,
            }
        )
    ref.warehouse.append("tasks", tasks)
    ref.warehouse.append("batches", units)
    return GenerationRef(ref.warehouse_uri, ref.run_id, answered_in, ModelRuntime()), tasks


@pytest.mark.parametrize("needs_agreement", [False, True])
def test_a_label_no_answer_matched_stays_out_of_d_train_when_agreement_is_needed(tmp_path, needs_agreement):
    """Hand-labelled tool_call tasks no answer of the agent's matched were wrong 14 times in 25, the rest 13 in 160,
    and a wrong task drawn as a seed passes its error on (docs/results.md section 17): with d_train_needs_agreement a
    valid task whose own p̂ is 0 stays out of D_train (still valid, still a duplicate for later outputs); D_env and
    the paper's rule without it are unchanged. The commit counts what joined and what stayed out."""
    from genenv.pipeline.contract import StageOutput
    from genenv.tasks.commit import _d_train, summary_line
    from genenv.tasks.grow_pools import grow_pools

    ref = _run(tmp_path, d_train_needs_agreement=needs_agreement)
    g1, tasks = _three_answered_tasks(ref, written_in=1, answered_in=1)
    grow_pools.fn(StageOutput(g1))
    pool = ref.warehouse.read("pool", run_id="r1", generation=1)
    joined = pool.filter(pool="train")["task_id"].to_list()
    expected = ["r1/g1/b0/v0", "r1/g1/b2/v0"] if needs_agreement else [t["task_id"] for t in tasks]
    assert sorted(joined) == expected
    assert pool.filter(pool="env")["task_id"].to_list() == ["r1/g1/b0/v0"]
    assert "r1/g1/b1/v0" in load_tasks(g1)  # still valid: a later copy of it is a duplicate
    d_train = _d_train(g1)
    assert d_train["d_train_added"] == d_train["d_train"] == len(expected)  # D_train was empty before
    assert d_train.get("d_train_unagreed") == (1 if needs_agreement else None)
    headline = ("valid_rate", "mean_p_hat", "band_share", "fresh_success", "heldout_success", "probe_before")
    blank = dict.fromkeys((*headline, "probe_after", "agent_loss", "simulator_loss"))
    line = summary_line(1, blank | d_train | {"d_env": 1, "d_env_added": 1, "stage_seconds": {}})
    kept_out = ", 1 valid kept out: no answer agreed" if needs_agreement else ""
    assert f"D_train {d_train['d_train']} (+{len(expected)}{kept_out}) D_env 1 (+1)" in line


def test_with_static_tasks_what_stayed_out_of_d_train_is_counted_from_generation_one(tmp_path):
    """static_tasks answers generation 1's tasks again in every later generation: the tasks D_train was offered, and
    so the ones kept out, are generation 1's, not the generation's own (it writes none)."""
    from genenv.pipeline.contract import StageOutput
    from genenv.tasks.commit import _d_train
    from genenv.tasks.grow_pools import grow_pools

    ref = _run(tmp_path, d_train_needs_agreement=True, static_tasks=True)
    g2, _ = _three_answered_tasks(ref, written_in=1, answered_in=2)
    grow_pools.fn(StageOutput(g2))
    assert _d_train(g2) == {"d_train": 2, "d_train_added": 2, "d_train_unagreed": 1}
