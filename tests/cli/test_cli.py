import json
import subprocess
import sys

from genenv.cli import main
from genenv.warehouse.schemas import now
from genenv.warehouse.store import Warehouse


def _filled_warehouse(root) -> Warehouse:
    warehouse = Warehouse(str(root))
    run = {
        "run_id": "r1",
        "run_name": "t",
        "created_at": now(),
        "config_json": "{}",
        "config_hash": "h",
        "model": "m",
        "domain": "tool_call",
        "parent_run_id": None,
        "parent_generation": None,
        "schema_version": 1,
    }
    warehouse.append("runs", [run])
    for generation in (0, 1):
        warehouse.append(
            "pool",
            [{"run_id": "r1", "generation": generation, "pool": "train", "task_id": f"t{generation}", "weight": 1.0}],
        )
        warehouse.commit_generation(
            "r1", generation, agent_checkpoint="a", simulator_checkpoint="s", config_hash="h", seed=0, metrics={}
        )
    warehouse.append("pool", [{"run_id": "r1", "generation": 2, "pool": "train", "task_id": "t2", "weight": 1.0}])
    return warehouse


def test_sql_prints_committed_rows_in_each_format(tmp_path, capsys):
    root = tmp_path / "wh"
    _filled_warehouse(root)
    sql = "SELECT generation, count(*) AS n FROM pool GROUP BY 1 ORDER BY 1"
    assert main(["sql", "--warehouse", str(root), "--format", "csv", sql]) == 0
    assert capsys.readouterr().out.splitlines() == ["generation,n", "0,1", "1,1"]
    as_of_0 = ["--run", "r1", "--as-of-generation", "0"]
    assert main(["sql", "--warehouse", str(root), "--format", "json", *as_of_0, sql]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == [{"generation": 0, "n": 1}]
    assert main(["sql", "--warehouse", str(root), sql]) == 0
    assert "generation" in capsys.readouterr().out


def test_sql_refuses_writes_with_a_clear_message(tmp_path, capsys):
    root = tmp_path / "wh"
    _filled_warehouse(root)
    assert main(["sql", "--warehouse", str(root), "DELETE FROM pool"]) == 2
    assert "read-only warehouse: DELETE" in capsys.readouterr().err


def test_bad_config_fails_before_anything_runs(tmp_path, capsys):
    assert main(["evolve", "--set", "alpha=1.5", "--set", f"data_dir={tmp_path}"]) == 2
    assert capsys.readouterr().err.strip() == "genenv: alpha: must be in [0, 1] (got 1.5)"
    assert list(tmp_path.iterdir()) == []


def test_a_resume_checks_the_config_it_will_run_before_anything_runs(tmp_path, capsys):
    """The stored config with the command's changes on top, not the command's file alone: a run registered with a
    local model folder since removed is refused naming it, before Prefect starts (no Prefect home made)."""
    from genenv.config import GenEnvConfig
    from genenv.pipeline.run_records import register_run

    data = tmp_path / "data"
    stored = GenEnvConfig(data_dir=str(data), model=str(tmp_path / "removed-model"))
    register_run(Warehouse(stored.resolved_warehouse_uri), stored, "r1")
    assert main(["evolve", "--run-id", "r1", "--set", f"data_dir={data}"]) == 2
    assert "removed-model' does not exist" in capsys.readouterr().err
    assert not (data / "prefect").exists()


def test_evolve_resolves_and_checks_its_config_before_importing_prefect():
    """`prepare_command` sets Prefect's environment (its home in the data folder, a temporary server) once the config
    is known; what the command imports to resolve and check the config must not import Prefect before that."""
    code = "import sys, genenv.cli.commands.evolve, genenv.pipeline.run_config; print('prefect' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_an_empty_run_id_is_refused_not_taken_for_a_new_run(tmp_path, capsys):
    assert main(["evolve", "--run-id", " ", "--set", f"data_dir={tmp_path}"]) == 2
    assert capsys.readouterr().err.strip().startswith("genenv: --run-id: empty")
    assert list(tmp_path.iterdir()) == []


def test_config_lists_every_field(capsys):
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert "alpha (float, default 0.5)" in out and "k_min (float, default 0.1)" in out


def test_compare_refuses_bad_requests_before_anything_runs(benchmark_dir, tmp_path, capsys):
    data = tmp_path / "data"
    common = ["compare", "--set", f"data_dir={data}", "--benchmarks", "bfcl", "--benchmarks-dir", str(benchmark_dir)]
    refused = {
        "--items: simple=3: no category ['simple'] in ['bfcl']": ["--items", "simple=3"],
        "--items: 'simple_python=x': expected category=N with N >= 0": ["--items", "simple_python=x"],
        "arms: an arm is named twice": ["--arms", "genenv,genenv"],
        "arms: unknown arm 'nope'": ["--arms", "genenv,nope"],
        "--limit: must be >= 1": ["--limit", "0"],
        "--benchmarks: unknown ['alfworld']": ["--benchmarks", "alfworld"],
        "--benchmarks-dir: folder does not exist": ["--benchmarks-dir", str(tmp_path / "nowhere")],
        "--seeds: expected comma-separated integers": ["--seeds", "0,x"],
        "seeds: need distinct seeds": ["--seeds", "1,1"],
        "from_run: no run 'nope' in the warehouse": ["--from-run", "nope"],
    }
    for message, extra in refused.items():
        assert main([*common, *extra]) == 2
        assert message in capsys.readouterr().err
    assert not data.exists()


def test_compare_flags():
    from genenv.cli import build_parser

    args = build_parser().parse_args(["compare", "--items", "simple_python=200,parallel=0", "--every-generation"])
    assert (args.items, args.every_generation, args.limit) == ("simple_python=200,parallel=0", True, None)
    assert build_parser().parse_args(["compare"]).every_generation is False


def test_runs_lists_each_run_with_its_last_committed_generation(tmp_path, capsys):
    root = tmp_path / "wh"
    _filled_warehouse(root)  # generations 0 and 1 committed, 2 half-written
    assert main(["runs", "--warehouse", str(root)]) == 0
    table = capsys.readouterr().out
    assert "last_generation" in table
    assert [line.strip("│ ").split()[-1] for line in table.splitlines() if line.startswith("│ r1")] == ["1"]
