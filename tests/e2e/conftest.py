"""Shared fixtures for the end-to-end tests: the built binary and the starter model paths."""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def hearth():
    exe = ROOT / "build" / "hearth"
    if not exe.exists():
        pytest.fail("build/hearth is missing: run `make build` first")

    def run(*args, env=None, timeout=300):
        e = dict(os.environ)
        e.update(env or {})
        return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout, env=e,
                              cwd=ROOT)

    return run


@pytest.fixture(scope="session")
def smollm2():
    p = os.environ.get("HEARTH_SMOLLM2_GGUF")
    if not p:
        pytest.fail("HEARTH_SMOLLM2_GGUF is not set (make setup fetches the starter models)")
    return p


TINY = str(ROOT / "tests" / "golden" / "tiny" / "tiny-qwen2.gguf")


def smol_server(*args):
    """Run `hearth serve` of SmolLM2 (HEARTH_SMOLLM2_GGUF) for a module's fixture, stopping it
    after: `yield from smol_server(flags...)`. Skips when the model is not set up."""
    from test_server_openai import Server
    p = os.environ.get("HEARTH_SMOLLM2_GGUF")
    if not p:
        pytest.skip("HEARTH_SMOLLM2_GGUF is not set")
    s = Server(p, *args)
    try:
        yield s
    finally:
        s.stop()
