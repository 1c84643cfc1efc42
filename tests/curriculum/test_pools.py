import random

from genenv.curriculum.pools import abstention_tasks, dense_groups, intended_abstentions
from genenv.domains.base import get_domain
from genenv.domains.tool_call.calls import parse_calls

TOOL_CALL = get_domain("tool_call")


def test_intended_abstentions_make_their_share_of_the_batch():
    assert intended_abstentions(0.2, 16) == 4  # 4 of 20 groups
    assert intended_abstentions(0.0, 16) == 0
    assert intended_abstentions(0.5, 6) == 6
    assert intended_abstentions(0.2, 2) == 1  # rounded up: a small batch still holds one


def test_dense_groups_keep_groups_whose_rewards_differ_up_to_each_purposes_count():
    groups = {
        "f1": ("fresh", [1.0, 0.0]),
        "f2": ("fresh", [1.0, 1.0]),
        "f3": ("fresh", [0.0, 1.0]),
        **{f"p{i}": ("pool", [0.0, 1.0] if i % 2 else [0.0, 0.0]) for i in range(10)},
        "a1": ("abstention", [1.0, 1.0]),
        "a2": ("abstention", [1.0, 0.0]),
    }
    kept = dense_groups(groups, {"fresh": None, "pool": 3, "abstention": 2}, random.Random(0))
    assert {"f1", "f3", "a2"} <= set(kept) and "f2" not in kept and "a1" not in kept
    pool = [g for g in kept if g.startswith("p")]
    assert len(pool) == 3 and all(int(g[1:]) % 2 for g in pool)
    assert kept == dense_groups(groups, {"fresh": None, "pool": 3, "abstention": 2}, random.Random(0))
    assert len(dense_groups(groups, {"pool": None}, random.Random(0))) == 2 + 5 + 1


def test_abstention_tasks_offer_functions_that_cannot_serve_the_request():
    seeds = TOOL_CALL.load_seeds()
    built = abstention_tasks(
        seeds, 40, random.Random(0), lambda o, r, i: TOOL_CALL.abstention_task(o, r, f"x{i}"), TOOL_CALL.dedup_key
    )
    assert len(built) == 40 and len({TOOL_CALL.dedup_key(t) for t in built}) == 40
    questions = {s.spec["question"]: s for s in seeds}
    for task in built:
        assert task.answer == "[]" and TOOL_CALL.is_abstention(task)
        source = questions[task.spec["question"]]  # a real training request, whose calls need other functions
        offered = {f["name"] for f in task.spec["functions"]}
        assert not TOOL_CALL.is_abstention(source)
        assert offered.isdisjoint(call.name for call in parse_calls(source.answer))
        assert TOOL_CALL.verify("[]", task).reward == 1.0


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


def test_too_few_workable_pairs_give_fewer_tasks_without_hanging():
    seeds = TOOL_CALL.load_seeds()[:1]
    assert abstention_tasks(seeds, 5, random.Random(0), lambda o, r, i: None, str) == []
