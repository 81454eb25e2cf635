"""actors.hardware: bfloat16 only where the CPU computes it natively, vLLM's CPU thread settings, and engine arguments."""
from dataclasses import replace

import pytest
from worker_models import worker

from actors.hardware import (
    IF_NATIVE,
    cpu_engine_env,
    cpu_flags,
    native_bf16,
    numerics,
    rank_threads,
    resolve_dtype,
    tcmalloc,
)
from jobs.engines.vllm.stage import engine_settings

AVX2_ONLY = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n"
AVX512_BF16 = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 avx512_vnni\n"
AMX = "processor\t: 0\nflags\t\t: fpu avx2 avx512f amx_tile amx_bf16 amx_int8\n"


def test_numerics_say_what_this_process_computes_float32_with(monkeypatch):
    """manifest.json's record of an engine's and an encoder's numbers: a setting that moves them is in it."""
    import torch

    record = numerics("cpu", "float32")
    assert (record["dtype"], record["device"], record["autocast"]) == ("float32", "cpu", False)
    assert set(record["cpu_bf16_flags"]) <= {"avx512_bf16", "amx_bf16"} and record["threads"] >= 1
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("medium")  # lets oneDNN compute float32 matmuls in bfloat16
        assert numerics("cpu", "float32")["float32_matmul_precision"] == "medium"
    finally:
        torch.set_float32_matmul_precision(before)
    monkeypatch.setenv("ONEDNN_DEFAULT_FPMATH_MODE", "BF16")
    assert numerics("cpu", "float32")["env"] == {"ONEDNN_DEFAULT_FPMATH_MODE": "BF16"}


def test_flags_are_read_from_cpuinfo_and_missing_cpuinfo_means_none():
    assert cpu_flags(AVX2_ONLY) == {"fpu", "sse2", "avx", "avx2", "fma"}
    assert cpu_flags("processor\t: 0\nmodel name\t: something\n") == frozenset()


def test_bfloat16_if_native_is_float32_on_an_avx2_only_cpu_and_bfloat16_where_the_cpu_has_it():
    assert resolve_dtype(IF_NATIVE, "cpu", cpu_flags(AVX2_ONLY)) == "float32"
    assert resolve_dtype(IF_NATIVE, "cpu", cpu_flags(AVX512_BF16)) == "bfloat16"
    assert resolve_dtype(IF_NATIVE, "cpu", cpu_flags(AMX)) == "bfloat16"
    assert resolve_dtype(IF_NATIVE, "cpu", frozenset()) == "float32"  # unknown CPU: never assume
    assert not native_bf16("cpu", cpu_flags(AVX2_ONLY)) and native_bf16("cpu", cpu_flags(AMX))


def test_explicit_dtypes_are_kept_whatever_the_cpu():
    for dtype in ("float32", "bfloat16", "float16", "auto"):
        assert resolve_dtype(dtype, "cpu", cpu_flags(AVX2_ONLY)) == dtype


def test_the_cpu_engine_reserves_no_core_and_binds_its_threads(monkeypatch):
    monkeypatch.delenv("VLLM_CPU_NUM_OF_RESERVED_CPU", raising=False)
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    assert cpu_engine_env(lib_dirs=()) == {"VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "VLLM_CPU_OMP_THREADS_BIND": "auto"}


def test_vllms_own_cpu_variables_set_by_the_user_are_passed_on_as_set(monkeypatch):
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "1")
    monkeypatch.setenv("VLLM_CPU_NUM_OF_RESERVED_CPU", "1")
    assert cpu_engine_env(lib_dirs=()) == {"VLLM_CPU_NUM_OF_RESERVED_CPU": "1", "VLLM_CPU_OMP_THREADS_BIND": "1"}


def test_tcmalloc_is_preloaded_where_installed_before_the_users_own_preloads(tmp_path, monkeypatch):
    (tmp_path / "lib64").mkdir()
    assert tcmalloc([str(tmp_path / "lib64")]) is None and "LD_PRELOAD" not in cpu_engine_env([str(tmp_path)])
    (tmp_path / "lib64" / "libtcmalloc.so.4").write_bytes(b"")
    found = str(tmp_path / "lib64" / "libtcmalloc.so.4")
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    assert cpu_engine_env([str(tmp_path), str(tmp_path / "lib64")])["LD_PRELOAD"] == found
    monkeypatch.setenv("LD_PRELOAD", "/opt/mine.so")
    assert cpu_engine_env([str(tmp_path / "lib64")])["LD_PRELOAD"] == f"{found}:/opt/mine.so"


def test_the_model_files_engine_args_come_last():
    model = worker(path="/x", dtype="float32", max_model_len=2048, tensor_parallel_size=1, enforce_eager=True,
                   kv_cache_gib=1, num_cpus=1, num_gpus=0)
    kwargs, _, _ = engine_settings(model, "/x", "logprobs")
    assert kwargs["max_num_batched_tokens"] == 8192 and kwargs["enable_prefix_caching"]
    assert engine_settings(model, "/x", "judge")[0]["enable_prefix_caching"]
    assert not engine_settings(model, "/x", "classify")[0]["enable_prefix_caching"]
    kwargs, _, _ = engine_settings(replace(model, engine_args={"enable_prefix_caching": False}), "/x", "logprobs")
    assert not kwargs["enable_prefix_caching"]
    kwargs, _, _ = engine_settings(replace(model, engine_args={"max_num_batched_tokens": 4096}), "/x", "logprobs")
    assert kwargs["max_num_batched_tokens"] == 4096


def test_a_tensor_parallel_cpu_engine_gives_each_rank_an_equal_run_of_cores():
    assert rank_threads(2, [1, 0]) == "0|1"
    assert rank_threads(2, list(range(16))) == "0-7|8-15"
    assert rank_threads(2, [0, 1, 2]) == "0|1"  # equal runs: the odd core is left to the engine's own process
    assert rank_threads(2, [0, 2, 4, 6]) == "0,2|4,6"
    with pytest.raises(ValueError, match="needs a core per rank"):
        rank_threads(4, [0, 1])


def test_tensor_parallel_on_cpu_runs_its_ranks_as_processes_and_on_gpu_leaves_the_executor_to_vllm():
    cpu = worker(path="some/model", dtype="float32", max_model_len=512, tensor_parallel_size=2, enforce_eager=True,
                 num_gpus=0, num_cpus=1, kv_cache_gib=1)
    kwargs, _, placement = engine_settings(cpu, "some/model", "classify")
    assert kwargs["distributed_executor_backend"] == "mp" and placement == {"bundles": [{"CPU": 1.0}] * 2}
    kwargs, _, _ = engine_settings(replace(cpu, num_gpus=1), "some/model", "classify")
    assert "distributed_executor_backend" not in kwargs
