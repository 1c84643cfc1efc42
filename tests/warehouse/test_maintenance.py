"""Compaction and vacuum keep every committed generation's snapshot readable, row for row."""

from __future__ import annotations

from genenv.warehouse.compaction import maintain
from genenv.warehouse.query import query
from genenv.warehouse.store import Warehouse
from tests.support import synthetic_warehouse as synthetic

SHAPE = synthetic.Shape(seeds=5, variations=2, k=2, pool_samples=2, prompt_tokens=4, text_chars=8)
SNAPSHOT = "SELECT * FROM trajectories ORDER BY trajectory_id"


def _fill_in_pieces(warehouse: Warehouse, generations: int) -> None:
    """Like the pipeline: trajectories of a generation arrive in several appends (rollout, then evaluation)."""
    warehouse.append("runs", [synthetic.run_row("m")])
    for g in range(generations):
        for table, data in synthetic.generation_frames("m", g, SHAPE).items():
            for piece in (data.head(data.height // 2), data.tail(data.height - data.height // 2)):
                warehouse.append(table, piece)
        warehouse.commit_generation(
            "m", g, agent_checkpoint="a", simulator_checkpoint="s", config_hash="h", seed=0, metrics={}
        )


def test_compaction_and_vacuum_keep_every_snapshot(root_uri):
    warehouse = Warehouse(root_uri)
    _fill_in_pieces(warehouse, 3)
    before = {g: query(warehouse, SNAPSHOT, run_id="m", as_of_generation=g) for g in range(3)}
    files_before = len(warehouse.table("trajectories").file_uris())
    report = {line["table"]: line for line in maintain(warehouse, retain_hours=0)}
    files_after = len(warehouse.table("trajectories").file_uris())
    assert report["trajectories"]["files_removed"] - report["trajectories"]["files_added"] == files_before - files_after
    assert files_after < files_before
    assert report["trajectories"]["pinned_versions"] == 3
    for g, rows in before.items():
        assert query(warehouse, SNAPSHOT, run_id="m", as_of_generation=g).equals(rows)
    assert query(warehouse, SNAPSHOT).equals(before[2])


def test_vacuum_removes_files_no_snapshot_needs(root_uri):
    warehouse = Warehouse(root_uri)
    _fill_in_pieces(warehouse, 2)
    # an abandoned attempt at generation 2 leaves two small files that no committed generation pins
    frames = synthetic.generation_frames("m", 2, SHAPE)["training"]
    warehouse.append("training", frames.head(3))
    warehouse.append("training", frames.tail(3))
    before = query(warehouse, "SELECT * FROM training ORDER BY generation, role, step", "m", as_of_generation=1)
    report = {line["table"]: line for line in maintain(warehouse, retain_hours=0)}
    assert report["training"]["files_vacuumed"] == 2
    after = query(warehouse, "SELECT * FROM training ORDER BY generation, role, step", "m", as_of_generation=1)
    assert after.equals(before)
