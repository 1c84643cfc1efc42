"""Warehouse benchmark (not a test): write a million trajectories, time every cookbook query.

    python bench/warehouse_queries.py [--rows 1000000] [--dir data/bench-warehouse] [--partition run|generation]
                                      [--smoke]

Reports write rows/s through `Warehouse.append` (pandera validation included), the cost of opening a
connection (`warehouse.query.connect`: resolving the committed snapshot, once), then each query of
docs/cookbook.md on that connection (DuckDB over the snapshot's Parquet files, committed rows only) next to the
same question answered by pandas from the same files (only the needed columns), timed alternately in one run.
Neither side pays for resolving the snapshot per query: pandas gets each table's file list resolved once too.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from options import add_smoke_option, parsed  # noqa: E402  (bench/ is the script's folder)

from genenv.warehouse import schemas  # noqa: E402
from genenv.warehouse.purposes import Purpose  # noqa: E402
from genenv.warehouse.query import connect, query  # noqa: E402
from genenv.warehouse.store import Warehouse  # noqa: E402
from tests.support import synthetic_warehouse as synthetic  # noqa: E402

COOKBOOK = Path(__file__).resolve().parents[1] / "docs" / "cookbook.md"
SHAPE = synthetic.Shape(seeds=1000, variations=8, k=8, pool_samples=2000, prompt_tokens=64, text_chars=160)
SMOKE_SHAPE = synthetic.Shape(seeds=10, variations=2, k=2, pool_samples=8, prompt_tokens=8, text_chars=20)


def cookbook() -> dict[str, str]:
    """The cookbook's queries for the tool-call domain the synthetic warehouse holds (others name their domain)."""
    blocks = re.findall(r"```sql\n-- name: (\w+)\n(.*?)```", COOKBOOK.read_text(), re.DOTALL)
    return {name: sql for name, sql in blocks if not sql.startswith("-- domain:")}


def pandas_answers(wh: Warehouse) -> dict[str, Callable[[], object]]:
    """The cookbook's questions in pandas, each loading its columns from Parquet first (file lists resolved once;
    every generation of the benchmark is committed, so no rows need hiding)."""
    files = {table: delta.file_uris() for table in schemas.TABLES if (delta := wh.table(table)) is not None}

    def load(table: str, columns: list[str]) -> pd.DataFrame:
        return pd.read_parquet(files[table], columns=columns)

    def p_hat_histogram():
        b = load("batches", ["generation", "p_hat"]).dropna()
        return b.assign(bin=np.floor(b.p_hat * 5) / 5).groupby(["generation", "bin"]).size()

    def reject_reasons():
        t = load("tasks", ["generation", "origin", "valid", "reject_reason"])
        return t[(t.origin == "simulator") & ~t.valid].groupby(["generation", "reject_reason"]).size()

    def favoured_seeds():
        b = load("batches", ["seed_task_id", "in_band", "rwr_weight", "n_valid"])
        g = b.groupby("seed_task_id").agg(band=("in_band", "mean"), w=("rwr_weight", "sum"), v=("n_valid", "sum"))
        return g.nlargest(10, "w")

    def simulator_update():
        t = load("training", ["generation", "role", "phase", "n_rows", "weight_min", "weight_median", "weight_max"])
        t = t[(t.role == "simulator") & (t.phase != "warm_start")]
        return t.groupby(["generation", "phase"]).agg(
            steps=("n_rows", "size"),
            rows=("n_rows", "sum"),
            weight_min=("weight_min", "min"),
            weight_median=("weight_median", "max"),
            weight_max=("weight_max", "max"),
        )

    def response_length():
        t = load("trajectories", ["generation", "purpose", "completion_tokens", "finished"])
        return t.groupby(["generation", "purpose"]).agg(
            mean=("completion_tokens", "mean"),
            p90=("completion_tokens", lambda s: s.quantile(0.9)),
            fin=("finished", "mean"),
        )

    def success_by_purpose():
        t = load("trajectories", ["generation", "purpose", "solved"])
        return t.pivot_table(index="generation", columns="purpose", values="solved", aggfunc="mean")

    def band_per_generation():
        b = load("batches", ["generation", "p_hat", "in_band", "generator_reward", "n_valid", "n_variations"])
        return b.groupby("generation").agg(
            p=("p_hat", "mean"), band=("in_band", "mean"), r=("generator_reward", "mean")
        )

    def pool_growth():
        p = load("pool", ["generation", "pool"])
        counts = p.groupby(["pool", "generation"]).size()
        return counts.groupby(level=0).cumsum()

    def training_curves():
        t = load("training", ["generation", "role", "phase", "loss", "kl", "step"])
        return t.groupby(["generation", "role", "phase"]).agg(loss=("loss", "mean"), kl=("kl", "mean"))

    def unsolved_seeds():
        r = load("trajectories", ["run_id", "task_id", "purpose", "solved"])
        t = load("tasks", ["run_id", "task_id", "seed_task_id"])
        j = r[r.purpose == Purpose.FRESH].merge(t, on=["run_id", "task_id"])
        g = j.groupby("seed_task_id").agg(solved=("solved", "sum"), rollouts=("solved", "size"))
        return g[g.solved == 0]

    def tool_success():
        t = load("trajectories", ["parsed_action", "solved"])
        tool = t.parsed_action.str.extract(r'"name": "([^"]+)"')[0]
        return t.assign(tool=tool).groupby("tool").agg(n=("solved", "size"), s=("solved", "mean"))

    def benchmark_by_generation():
        e = load("evaluations", ["run_id", "generation", "category", "value", "n", "benchmark"])
        return e[e.benchmark == "bfcl"].sort_values(["run_id", "generation", "category"])

    def generation_metrics():
        g = load("generations", ["run_id", "generation", "committed_at", "metrics", "table_versions"])
        return g.sort_values(["run_id", "generation"])

    return {
        f.__name__: f
        for f in (
            p_hat_histogram,
            reject_reasons,
            favoured_seeds,
            simulator_update,
            response_length,
            success_by_purpose,
            band_per_generation,
            pool_growth,
            training_curves,
            unsolved_seeds,
            tool_success,
            benchmark_by_generation,
            generation_metrics,
        )
    }


def timed(function: Callable[[], object], repeats: int) -> float:
    function()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def timed_pair(first: Callable[[], object], second: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median times of two functions run alternately, so both see the same machine load."""
    first(), second()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for function, spent in zip((first, second), times, strict=True):
            started = time.perf_counter()
            function()
            spent.append(time.perf_counter() - started)
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> int:
    parser = add_smoke_option(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--rows", type=int, default=1_000_000, help="trajectory rows to write")
    parser.add_argument("--dir", type=Path, default=Path("data") / "bench-warehouse")
    parser.add_argument("--partition", choices=("run", "generation"), default="generation")
    parser.add_argument("--repeats", type=int, default=5)
    args = parsed(parser, rows=200, repeats=1)
    shape = SMOKE_SHAPE if args.smoke else SHAPE

    if args.partition == "run":
        schemas.PARTITIONS.update({table: ["run_id"] for table in schemas.GENERATION_TABLES})
    shutil.rmtree(args.dir, ignore_errors=True)
    warehouse = Warehouse(str(args.dir / "warehouse"))
    warehouse.append("runs", [synthetic.run_row("bench")])
    written, generation, write_seconds, total_rows = 0, 0, 0.0, 0
    while written < args.rows:
        frames = synthetic.generation_frames("bench", generation, shape)
        started = time.perf_counter()
        for table, data in frames.items():
            warehouse.append(table, data)
        scores, items = synthetic.evaluation_rows("bench", generation)
        warehouse.append("evaluation_items", items)
        warehouse.append("evaluations", scores)
        warehouse.commit_generation(
            "bench", generation, agent_checkpoint="a", simulator_checkpoint="s", config_hash="h", seed=0, metrics={}
        )
        write_seconds += time.perf_counter() - started
        written += frames["trajectories"].height
        total_rows += sum(data.height for data in frames.values())
        generation += 1
    size_mb = sum(f.stat().st_size for f in args.dir.rglob("*.parquet")) / 2**20
    print(f"partitioning: run_id{', generation' if args.partition == 'generation' else ''}")
    print(
        f"wrote {written:,} trajectories ({total_rows:,} rows in all tables) in {generation} generations, "
        f"{size_mb:.0f} MiB of Parquet"
    )
    print(
        f"write: {written / write_seconds:,.0f} trajectory rows/s ({total_rows / write_seconds:,.0f} rows/s all tables)"
    )
    pandas_versions = pandas_answers(warehouse)
    opened = timed(lambda: connect(warehouse).close(), args.repeats)
    print(f"\nconnect (resolve the committed snapshot of every table, once per connection): {opened:.3f} s")
    con = connect(warehouse)
    print(f"\n{'query':<26}{'duckdb s':>10}{'pandas s':>10}{'pandas/duckdb':>15}")
    ratios, slowest = [], 0.0
    for name, sql in cookbook().items():
        duck, pand = timed_pair(lambda sql=sql: con.sql(sql).pl(), pandas_versions[name], args.repeats)
        ratios.append(pand / duck)
        slowest = max(slowest, duck)
        print(f"{name:<26}{duck:>10.3f}{pand:>10.3f}{pand / duck:>14.1f}x")
    print(f"\nslowest cookbook query: {slowest:.3f} s")
    print(f"geometric mean speed-up over pandas: {statistics.geometric_mean(ratios):.1f}x")
    one_shot = timed(lambda: query(warehouse, cookbook()["response_length"]), args.repeats)
    print(f"one-shot query (genenv sql: connect + response_length): {one_shot:.3f} s")
    one = "SELECT count(*) FROM trajectories WHERE run_id = 'bench' AND generation = 3"
    read_one = timed(lambda: warehouse.read("batches", run_id="bench", generation=3), args.repeats)
    count_one = timed(lambda: query(warehouse, one), args.repeats)
    print(f"one-generation reads (pipeline pattern): batches {read_one:.3f} s, trajectories count {count_one:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
