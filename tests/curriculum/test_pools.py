import random
from collections import Counter

from genenv.curriculum.pools import (
    GROUP_KINDS,
    Group,
    abstention_tasks,
    abstentions_for_share,
    replay_order,
    select_groups,
    still_missing,
)
from genenv.domains.base import get_domain
from genenv.domains.tool_call.calls import parse_calls

TOOL_CALL = get_domain("tool_call")


def test_abstentions_make_their_share_of_the_batch():
    assert abstentions_for_share(0.2, 16) == 4  # 4 of 20 groups
    assert abstentions_for_share(0.0, 16) == 0
    assert abstentions_for_share(0.5, 6) == 6
    assert abstentions_for_share(0.1, 9) == 1  # 1 of 10
    assert abstentions_for_share(0.1, 4) == 0  # 0.44 rounds down: the share holds on average, not in excess


def group(purpose: str, abstains: bool, *rewards: float) -> Group:
    return Group(purpose, abstains, tuple(rewards))


def test_abstention_is_a_share_of_what_is_trained_whatever_its_source():
    """Abstaining groups of every source (fresh `[]` tasks, pool `[]` tasks, constructed ones) come under one cap,
    counted on the call groups that are trained, after dynamic sampling dropped those with equal rewards."""
    groups = {
        **{f"f{i}": group("fresh", False, 1.0, 0.0) for i in range(4)},
        "f-equal": group("fresh", False, 0.0, 0.0),
        **{f"p{i}": group("pool", False, 0.0, 1.0) for i in range(10)},
        "f-abstain": group("fresh", True, 1.0, 0.0),
        "p-abstain": group("pool", True, 0.0, 1.0),
        **{f"a{i}": group("abstention", True, 1.0, 0.0) for i in range(5)},
    }
    kept = select_groups(groups, call_target=9, share=0.1, rng=random.Random(0))
    calls = [i for i in kept if not groups[i].abstains]
    assert {"f0", "f1", "f2", "f3"} <= set(kept) and "f-equal" not in kept
    assert len(calls) == 9  # 4 fresh call groups with a spread, then 5 pool ones fill the intended count
    assert len(kept) - len(calls) == 1  # 10% of 10 trained groups
    assert kept == select_groups(groups, call_target=9, share=0.1, rng=random.Random(0))
    assert still_missing(groups, 9, 0.1) == (0, 0)
    assert still_missing(groups, 20, 0.1) == (6, 0)  # 14 call groups have a spread; 2 abstaining of them is 12.5%
    everything = select_groups(groups, call_target=30, share=0.5, rng=random.Random(0), dense=False)
    assert "f-equal" in everything and len(everything) == 15 + 7  # no spread needed, the cap is 15 of 30


def test_a_fixed_agent_batch_takes_fresh_groups_first_and_no_more_than_it_holds():
    """agent_call_groups below the simulator's fresh tasks: a seeded draw of the fresh call groups fills the batch, no
    pool group joins, and nothing is missing (so dynamic sampling draws no more pool tasks)."""
    groups = {
        **{f"f{i}": group("fresh", False, 1.0, 0.0) for i in range(12)},
        **{f"p{i}": group("pool", False, 0.0, 1.0) for i in range(4)},
        **{f"a{i}": group("abstention", True, 1.0, 0.0) for i in range(3)},
    }
    kept = select_groups(groups, call_target=6, share=0.25, rng=random.Random(0))
    calls = [i for i in kept if not groups[i].abstains]
    assert len(calls) == 6 and all(i.startswith("f") for i in calls)
    assert len(kept) - len(calls) == 2  # 25% of 8 trained groups
    assert calls != [f"f{i}" for i in range(6)]  # drawn, not the first ones
    assert kept == select_groups(groups, call_target=6, share=0.25, rng=random.Random(0))
    assert still_missing(groups, 6, 0.25) == (0, 0)
    assert still_missing(groups, 20, 0.25) == (4, 4)  # 16 calls with a spread; 3 abstaining of the 7 for 20 calls


def test_group_kinds():
    assert [
        group(purpose, abstains, 0.0).kind
        for purpose, abstains in [
            ("fresh", False),
            ("fresh", True),
            ("pool", False),
            ("pool", True),
            ("abstention", True),
        ]
    ] == list(GROUP_KINDS)


def test_abstention_tasks_offer_functions_that_cannot_serve_the_request():
    seeds = TOOL_CALL.load_seeds()
    kinds = TOOL_CALL.abstention_builders(seeds)
    builders = [lambda rng, i, kind=kind: kinds[kind](rng, f"{kind}/{i}") for kind in kinds]
    built = abstention_tasks(60, random.Random(0), builders, lambda b: TOOL_CALL.dedup_key(b[0]))
    assert len(built) == 60 and len({TOOL_CALL.dedup_key(t) for t, _ in built}) == 60
    assert Counter(t.task_id.split("/")[0] for t, _ in built) == {kind: 20 for kind in kinds}
    by_id = {s.task_id: s for s in seeds}
    for task, source_id in built:
        assert task.answer == "[]" and TOOL_CALL.is_abstention(task)
        assert TOOL_CALL.verify("[]", task).reward == 1.0
        offered = {f["name"] for f in task.spec["functions"]}
        source = by_id[source_id]
        assert offered == {f["name"] for f in source.spec["functions"]}
        kind = task.task_id.split("/")[0]
        if kind == "missing_value":  # its own functions, a request that no longer states a required value
            assert task.spec["question"] != source.spec["question"] and not TOOL_CALL.is_abstention(source)
            assert " something" in task.spec["question"] or " some" in task.spec["question"]
            continue
        request = next(
            s for s in seeds if s.spec["question"] == task.spec["question"] and not TOOL_CALL.is_abstention(s)
        )
        called = {call.name for call in parse_calls(request.answer)}
        assert offered.isdisjoint(called)  # a real training request, whose calls need other functions
        spaces = {name.split(".")[0] for name in offered} & {name.split(".")[0] for name in called}
        assert bool(spaces) == (kind == "same_family")


def test_a_request_its_functions_can_serve_is_no_abstention():
    seeds = TOOL_CALL.load_seeds()
    calls = next(s for s in seeds if not TOOL_CALL.is_abstention(s))
    assert TOOL_CALL.abstention_task(calls, calls, "x") is None  # its own functions serve it
    abstention = next(s for s in seeds if TOOL_CALL.is_abstention(s))
    assert TOOL_CALL.abstention_task(calls, abstention, "x") is None  # nothing to abstain from
    same_namespace = next(
        s
        for s in seeds
        if s.family != calls.family and s.spec["functions"][0]["name"].split(".")[0] == calls.answer[1:].split(".")[0]
    )
    assert TOOL_CALL.abstention_task(same_namespace, calls, "x") is None


def test_too_few_workable_draws_give_fewer_tasks_without_hanging():
    assert abstention_tasks(5, random.Random(0), [lambda rng, i: None], str) == []
    one_call = [s for s in TOOL_CALL.load_seeds() if not TOOL_CALL.is_abstention(s)][:1]
    kinds = TOOL_CALL.abstention_builders(one_call)
    assert kinds["unrelated"](random.Random(0), "x") is None and kinds["same_family"](random.Random(0), "x") is None


def test_replays_the_agent_always_solves_are_drawn_less_but_never_dropped():
    """replay_order: a task solved at least EASY of the time when last seen weighs EASY_DRAW_WEIGHT in the seeded
    shuffle of D_train, so the first draws favour the rest; every task stays in the order, and one seed one order."""
    ids = [f"t{i}" for i in range(40)]
    last = {f"t{i}": 1.0 if i < 20 else 0.5 for i in range(30)}  # t0-t19 easy, t20-t29 at the edge, t30-t39 unseen
    firsts = Counter()
    for seed in range(300):
        order = replay_order(ids, last, random.Random(seed))
        assert sorted(order) == sorted(ids)
        firsts.update(order[:10])
    easy = sum(firsts[f"t{i}"] for i in range(20)) / 20
    other = sum(firsts[f"t{i}"] for i in range(20, 40)) / 20
    assert easy < 0.5 * other  # uniform shuffles would give equal rates
    assert replay_order(ids, last, random.Random(1)) == replay_order(ids, last, random.Random(1))


def test_a_group_is_at_the_edge_by_the_share_of_all_its_answers_solved():
    assert Group("fresh", False, (1.0, 0.0, 1.0, 1.0), success=0.5).at_edge
    assert not Group("fresh", False, (1.0, 0.0, 1.0, 1.0), success=0.875).at_edge
    assert not Group("pool", False, (1.0, 1.0, 1.0, 1.0)).at_edge  # no estimate: not counted at the edge
