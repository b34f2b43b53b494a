"""`nn2c sweep` / nn2c.sweep.run_sweep on a real local Ray cluster (no mocks of Ray or of nn2c.profile).

One multi-node cluster (ray.cluster_utils.Cluster: a head without CPUs and two 1-CPU worker nodes) is
shared by the module, since Ray's start-up costs seconds:
- a small sweep through the CLI gives one row per candidate, with RAM equal to nn2c.profile on the
  same in-memory graph, and writes the plot and the HTML page;
- a re-run skips the done candidates, and an interrupted results.csv (rows missing, a row cut short)
  is completed by re-running only what is missing;
- a candidate nn2c cannot compile is a failed row with its error, and the sweep goes on;
- bad input is one line and exit 7: malformed SPACE.yaml (naming the key), unknown board, an
  unreachable Ray address;
- fault tolerance: a third worker node is killed mid-sweep; Ray re-runs its tasks and the CSV holds
  every candidate, all profiled.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner

from nn2c.cli import main as cli_main
from nn2c.frontends.tflite_frontend import load_tflite
from nn2c.profiler import profile
from nn2c.sweep import SearchSpace, build_candidate, candidates, read_results, run_sweep
from tests.conftest import model_path

try:
    import ray
    from ray.cluster_utils import Cluster
except ImportError:  # pragma: no cover - CI installs nn2c[sweep]
    pytest.skip("SKIPPED LOUDLY: ray is not installed; pip install 'nn2c[sweep]' (CI installs it)",
                allow_module_level=True)

BOARD = "stm32f746"
# tiny candidates (input 32-40, two stages) so that a profile takes a fraction of a second
TINY = SearchSpace(candidates=8, seed=3, resolution=(32, 40), width=(0.35, 0.5), depth=(1, 2),
                   stages=((16, 2), (24, 2)), classes=4)


@pytest.fixture(scope="module")
def cluster():
    if ray.is_initialized():
        ray.shutdown()
    # a dead node is noticed after 3 missed health checks of 200 ms (default: 3 of 3 s), to keep the test short
    config = {"health_check_period_ms": 200, "health_check_timeout_ms": 200, "health_check_failure_threshold": 3}
    local = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False,
                                                          "_system_config": config})
    for _ in range(2):
        local.add_node(num_cpus=1)
    ray.init(address=local.address, include_dashboard=False, log_to_driver=False)
    local.wait_for_nodes()
    yield local
    ray.shutdown()
    local.shutdown()


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_small_sweep_rows_equal_profile(cluster, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text("candidates: 8\nseed: 3\nresolution: [32, 40]\nwidth: [0.35, 0.5]\ndepth: [1, 2]\n"
                     "classes: 4\nstages:\n  - {channels: 16, stride: 2}\n  - {channels: 24, stride: 2}\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(cli_main, ["sweep", str(space), "-o", str(out), "--board", BOARD])
    assert result.exit_code == 0, result.output
    rows = _csv_rows(out / "results.csv")
    expected = candidates(TINY)
    assert sorted(r["id"] for r in rows) == sorted(c.id for c in expected)  # the YAML is TINY
    by_id = {r["id"]: r for r in rows}
    for c in expected:
        row = by_id[c.id]
        assert row["status"] == "ok", row["error"]
        prof = profile(load_tflite("c", build_candidate(c.params)), board=BOARD)
        assert int(row["ram_bytes"]) == prof.ram_bytes
        assert int(row["macs"]) == prof.macs
        assert int(row["weight_bytes"]) == prof.weight_bytes
        assert int(row["predicted_instructions"]) == round(prof.predicted[prof.target])
        fits = prof.fits()
        assert fits is not None
        assert row["fits"] == ("yes" if fits["ram"] and fits["flash"] else "no")
    assert (out / "pareto.png").stat().st_size > 0
    assert "Pareto front" in (out / "index.html").read_text()


def test_resume_skips_done_candidates(cluster, tmp_path):
    first = run_sweep(TINY, tmp_path, board=BOARD, progress=False, report=False)
    assert (first.evaluated, first.skipped) == (8, 0)
    again = run_sweep(TINY, tmp_path, board=BOARD, progress=False, report=False)
    assert (again.evaluated, again.skipped) == (0, 8)
    # an interrupted sweep: three rows never written, the last one cut short mid-line
    lines = (tmp_path / "results.csv").read_text().splitlines(keepends=True)
    kept = lines[:1 + 5]
    (tmp_path / "results.csv").write_text("".join(kept) + lines[6][:20])
    resumed = run_sweep(TINY, tmp_path, board=BOARD, progress=False, report=False)
    assert (resumed.evaluated, resumed.skipped) == (3, 5)
    rows = read_results(tmp_path / "results.csv")
    assert sorted(r["id"] for r in rows) == sorted(c.id for c in candidates(TINY))
    assert all(r["status"] == "ok" for r in rows)


def test_failing_candidate_is_recorded_and_sweep_goes_on(cluster, tmp_path):
    bad = tmp_path / "broken.tflite"
    bad.write_bytes(b"not a flatbuffer at all")
    good = model_path("tflite_micro/hello_world_float.tflite")
    space = tmp_path / "files.yaml"
    space.write_text(f"models: [{good}, broken.tflite, {model_path('mlcommons_tiny/ad01_int8.tflite')}]\n")
    result = run_sweep(space, tmp_path / "out", board=BOARD, progress=False)
    rows = sorted(result.rows, key=lambda r: int(r["index"]))
    assert [r["status"] for r in rows] == ["ok", "failed", "ok"]
    assert rows[1]["error"].startswith("InvalidModelError:") and "TFL3" in rows[1]["error"]
    assert int(rows[0]["ram_bytes"]) == profile(good, board=BOARD).ram_bytes
    assert "broken.tflite" in (tmp_path / "out" / "index.html").read_text()


@pytest.mark.parametrize(("yaml_text", "args", "message"), [
    ("candidates: 4\nresolution: [32, big]\n", [], "key 'resolution'"),
    ("candidates: 4\nkernel_sizes: [3, 4]\n", [], "key 'kernel_sizes'"),
    ("candidates: 4\nstages: [{channels: 8}]\n", [], "key 'stages'"),
    ("candidate: 4\n", [], "key 'candidate': unknown key"),
    ("candidates: [4\n", [], "not valid YAML at line 2"),
    ("candidates: 2\n", ["--board", "stm32nope"], "unknown board 'stm32nope'"),
    ("candidates: 2\n", ["--address", "127.0.0.1:9"], "cannot reach the Ray cluster at 127.0.0.1:9"),
])
def test_bad_input_is_one_line_exit_7(cluster, tmp_path, yaml_text, args, message):
    space = tmp_path / "space.yaml"
    space.write_text(yaml_text)
    result = CliRunner().invoke(cli_main, ["sweep", str(space), "-o", str(tmp_path / "out"), *args])
    assert result.exit_code == 7, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nn2c: error:") and message in lines[0], result.output
    assert not (tmp_path / "out" / "results.csv").exists()


def test_worker_node_killed_mid_sweep_loses_nothing(cluster, tmp_path):
    victim = cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    space = SearchSpace(candidates=12, seed=11, resolution=(40, 48), width=(0.5,), depth=(1, 2),
                        stages=((16, 2), (24, 2)), classes=4)
    killed = []

    def kill_after_first(_row):
        if not killed:
            cluster.remove_node(victim, allow_graceful=False)
            killed.append(victim)

    result = run_sweep(space, tmp_path, board=BOARD, progress=False, report=False, on_row=kill_after_first)
    assert killed
    rows = _csv_rows(tmp_path / "results.csv")
    assert sorted(r["id"] for r in rows) == sorted(c.id for c in candidates(space))
    assert [r["status"] for r in rows] == ["ok"] * 12, [r["error"] for r in rows if r["error"]]
    assert result.evaluated == 12
