"""fg.config.host_memory_keep: freed host memory kept by glibc's malloc for reuse (funcgrad.host_memory)."""

import subprocess
import sys
import textwrap

import pytest

import funcgrad as fg
from funcgrad import host_memory

on_glibc = host_memory._mallopt() is not None

# Six 2 MiB arrays made and freed per round, as a training step's activations are: counted in
# minor page faults per round (each fresh 4 KiB page is one; 3,072 if no page is reused).
FAULTS_PER_ROUND = textwrap.dedent("""
    import importlib.util, resource, sys, numpy as np
    spec = importlib.util.spec_from_file_location("host_memory", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.apply_environment()   # what ``import funcgrad`` runs (without the rest of the import)
    def rounds(n):
        for _ in range(n):
            arrays = [np.ones((32, 16, 32, 32), np.float32) for _ in range(6)]
            del arrays
    rounds(3)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    rounds(20)
    print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20)
""")


def _faults_per_round(env_value: str) -> float:
    env = {"FUNCGRAD_HOST_MEMORY_KEEP": env_value, "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", FAULTS_PER_ROUND, host_memory.__file__], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return float(out.stdout)


@pytest.mark.skipif(not on_glibc, reason="mallopt is glibc's")
def test_the_default_reuses_freed_pages_and_zero_in_the_environment_leaves_malloc_alone():
    assert _faults_per_round("") < 100
    assert _faults_per_round("0") > 1000


@pytest.mark.skipif(not on_glibc, reason="mallopt is glibc's")
def test_the_setting_reads_back_and_the_default_is_64_mib(monkeypatch):
    assert host_memory.DEFAULT_KEEP == 64 * 2**20
    if "FUNCGRAD_HOST_MEMORY_KEEP" not in __import__("os").environ:
        assert fg.config.host_memory_keep == host_memory.DEFAULT_KEEP   # set by ``import funcgrad``
    before = fg.config.host_memory_keep
    try:
        fg.config.host_memory_keep = 128 * 2**20
        assert fg.config.host_memory_keep == 128 * 2**20
        fg.config.update("host_memory_keep", 32 * 2**20)
        assert fg.config.host_memory_keep == 32 * 2**20
    finally:
        fg.config.host_memory_keep = before or host_memory.DEFAULT_KEEP


@pytest.mark.parametrize("bad", [-1, 2**31, 1.5, "64M", True, None])
def test_bad_values_name_the_setting_and_what_it_takes(bad):
    with pytest.raises(ValueError, match=r"host_memory_keep must be an integer number of bytes"):
        fg.config.host_memory_keep = bad


def test_a_bad_environment_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("FUNCGRAD_HOST_MEMORY_KEEP", "lots")
    with pytest.raises(ValueError, match="FUNCGRAD_HOST_MEMORY_KEEP must be an integer"):
        host_memory.apply_environment()


def test_without_mallopt_nothing_is_set(monkeypatch):
    monkeypatch.setattr(host_memory, "_mallopt", lambda: None)
    before = host_memory.kept_bytes()
    assert host_memory.keep_freed_memory(1 << 20) is False
    assert host_memory.kept_bytes() == before
