"""A reader querying in a loop while a writer process commits 20 generations never sees a partial one."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

from genenv.warehouse.query import query
from genenv.warehouse.store import Warehouse
from tests.support import synthetic_warehouse as synthetic

SHAPE = synthetic.Shape(seeds=5, variations=2, k=2, pool_samples=2, prompt_tokens=4, text_chars=8)
GENERATIONS = 20
COUNTS = """
SELECT 'tasks' AS tbl, generation, count(*) AS n FROM tasks GROUP BY ALL
UNION ALL SELECT 'trajectories', generation, count(*) FROM trajectories GROUP BY ALL
UNION ALL SELECT 'batches', generation, count(*) FROM batches GROUP BY ALL
UNION ALL SELECT 'pool', generation, count(*) FROM pool GROUP BY ALL
UNION ALL SELECT 'generations', generation, count(*) FROM generations GROUP BY ALL
"""


def test_readers_never_see_a_partial_generation(root_uri):
    expected = {}
    for g in range(GENERATIONS):
        for table, data in synthetic.generation_frames("conc", g, SHAPE).items():
            if table in ("tasks", "trajectories", "batches", "pool"):
                expected[(table, g)] = data.height
    if "://" not in root_uri:
        Path(root_uri).mkdir(parents=True)  # readers start before the writer's first table: the warehouse exists
    writer = multiprocessing.get_context("spawn").Process(
        target=synthetic.fill, args=(Warehouse(root_uri), "conc", GENERATIONS, SHAPE, False)
    )
    writer.start()
    seen: set[int] = set()
    reads = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        finished = not writer.is_alive()
        counts = {(tbl, g): n for tbl, g, n in query(Warehouse(root_uri), COUNTS).rows()}
        visible = {g for (tbl, g) in counts if tbl == "generations"}
        for (table, g), n in counts.items():
            assert g in visible, f"{table} shows rows of uncommitted generation {g}"
            if table != "generations":
                assert n == expected[(table, g)], f"{table} generation {g}: {n} rows of {expected[(table, g)]}"
        for g in visible:
            for table in ("tasks", "trajectories", "batches", "pool"):
                assert counts.get((table, g), 0) == expected.get((table, g), 0), f"{table} incomplete in {g}"
        assert seen <= visible, "a committed generation disappeared"
        seen, reads = visible, reads + 1
        if finished:
            break
        time.sleep(0.2)  # leave the writer a core on a 2-core machine
    writer.join(timeout=10)
    assert writer.exitcode == 0
    assert seen == set(range(GENERATIONS))
    assert reads > 3, "the reader never overlapped the writer"
