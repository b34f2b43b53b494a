"""nn2c.verify.build's kernel object cache: the same program as without it, a new object whenever a kernel or a
file it includes changes, none from a failed compile."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.errors import BuildError
from nn2c.verify.build import OBJECT_CACHE_ENV, build, prune_object_cache, run
from nn2c.verify.inputs import random_records
from tests.conftest import model_path


def _objects(cache: Path) -> set[str]:
    return {p.name for p in cache.glob("*.o")}


def test_cached_build_runs_like_the_plain_one(tmp_path: Path, monkeypatch):
    monkeypatch.delenv(OBJECT_CACHE_ENV, raising=False)
    result = compile_model(model_path("mlcommons_tiny/kws_ref_model.tflite"), CompileOptions())
    out = result.write(tmp_path / "kws")
    records = random_records(result.graph.inputs, 2, 0)
    plain = run(build(out, tmp_path / "plain"), records, result.graph.inputs, result.graph.outputs)
    cache = tmp_path / "cache"
    first = run(build(out, tmp_path / "first", object_cache=cache), records, result.graph.inputs,
                result.graph.outputs)
    kernels = {p.stem for p in (out / "nn2c_kernels").glob("*.c")}
    assert {name.rsplit("_", 1)[0] for name in _objects(cache)} == kernels
    before = {p.name: p.stat().st_mtime_ns for p in cache.glob("*.o")}
    second = run(build(out, tmp_path / "second", object_cache=cache), records, result.graph.inputs,
                 result.graph.outputs)
    assert {p.name: p.stat().st_mtime_ns for p in cache.glob("*.o")} == before  # reused, not compiled again
    for a, b, c in zip(plain, first, second, strict=True):
        for x, y, z in zip(a, b, c, strict=True):
            np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(x, z)


def test_a_changed_header_or_flag_compiles_a_new_object(tmp_path: Path):
    result = compile_model(model_path("tflite_micro/hello_world_int8.tflite"), CompileOptions())
    out = result.write(tmp_path / "hello")
    cache = tmp_path / "cache"
    build(out, tmp_path / "a", object_cache=cache)
    objects = _objects(cache)
    # nn2c_config.h reaches every kernel through nn2c_common.h: each is compiled again
    config = out / "nn2c_kernels" / "nn2c_config.h"
    config.write_text(config.read_text() + "\n/* changed */\n")
    build(out, tmp_path / "b", object_cache=cache)
    assert len(_objects(cache)) == 2 * len(objects)
    # a file no kernel includes changes no key
    (out / "nn2c_kernels" / "unrelated.h").write_text("/* not included */\n")
    build(out, tmp_path / "c", object_cache=cache)
    assert len(_objects(cache)) == 2 * len(objects)
    build(out, tmp_path / "d", extra_flags=["-DNN2C_UNUSED_FLAG"], object_cache=cache)
    assert len(_objects(cache)) == 3 * len(objects)


def test_a_kernel_that_fails_to_compile_leaves_no_object(tmp_path: Path):
    result = compile_model(model_path("tflite_micro/hello_world_int8.tflite"), CompileOptions())
    out = result.write(tmp_path / "hello")
    kernel = next((out / "nn2c_kernels").glob("*.c"))
    kernel.write_text(kernel.read_text() + "\nint unused_and_broken(void) { return }\n")
    cache = tmp_path / "cache"
    with pytest.raises(BuildError, match="C compiler failed on"):
        build(out, tmp_path / "broken", object_cache=cache)
    assert not list(cache.glob(f"{kernel.stem}_*"))


def test_cortex_m_image_from_cached_kernels_is_the_same(tmp_path: Path, monkeypatch):
    """The Cortex-M bench (nn2c.targets.cortexm_build) takes cached kernel objects under their own names, with
    their -fstack-usage files: the same instructions and code bytes as compiled in place."""
    from nn2c.targets.cortexm_bench import bench_model
    from nn2c.targets.cortexm_build import missing_tools

    missing = missing_tools()
    if missing:
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing)} not installed")
    model = model_path("mlcommons_tiny/ad01_int8.tflite")
    monkeypatch.delenv(OBJECT_CACHE_ENV, raising=False)
    plain = bench_model(model, target="cortex-m4", count=1, seed=0, workdir=tmp_path / "plain")
    monkeypatch.setenv(OBJECT_CACHE_ENV, str(tmp_path / "cache"))
    cached = [bench_model(model, target="cortex-m4", count=1, seed=0, workdir=tmp_path / f"cached{i}")
              for i in range(2)]
    assert _objects(tmp_path / "cache")
    for report in cached:
        assert report.passed() and report.instructions == plain.instructions
        assert report.footprint.flash_code == plain.footprint.flash_code
    plain_su = sorted(p.name for p in (tmp_path / "plain").rglob("obj/*.su"))
    assert plain_su and sorted(p.name for p in (tmp_path / "cached1").rglob("obj/*.su")) == plain_su


def test_pruning_deletes_only_old_cached_files(tmp_path: Path):
    result = compile_model(model_path("tflite_micro/hello_world_int8.tflite"), CompileOptions())
    cache = tmp_path / "cache"
    build(result.write(tmp_path / "hello"), tmp_path / "a", object_cache=cache)
    cached = sorted(cache.glob("*"))
    assert {p.suffix for p in cached} == {".o", ".txt"}
    foreign = cache / "notes_0123456789abcdef0123456789abcdef.md"  # a user's file in the same directory
    foreign.write_text("kept")
    os.utime(foreign, (0, 0))
    prune_object_cache(cache, older_than=cached[0].stat().st_mtime - 1)  # all cached files newer: kept
    assert sorted(cache.glob("*")) == sorted([*cached, foreign])
    prune_object_cache(cache, older_than=cached[-1].stat().st_mtime + 1)
    assert sorted(cache.glob("*")) == [foreign]
