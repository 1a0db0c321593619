"""/openapi.json: served, equal to the committed description, listing every route of the
router, and fuzzed with schemathesis against a running `hearth serve` of SmolLM2.

The fuzzing generates requests from the description (valid ones, and for request bodies also
invalid ones) for every operation, a bounded number each with a fixed seed, and fails on any
5xx or any response that the description does not allow (status, content type, body schema).
To keep it fast the copy the generator reads has small request bodies (short strings and
lists, token limits of 4); the served description keeps the real bounds and the responses
are checked against it unchanged. POST /downloads is left out: it would fetch from the hub;
POST /admin/drain too: it would stop the server.
"""
import json
import os
import pathlib
import re

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (content_type_conformance, response_schema_conformance,
                                               status_code_conformance)

from conftest import ROOT, smol_server

SPEC = ROOT / "src" / "server" / "api" / "openapi.json"
TOKEN_LIMITS = ("max_tokens", "max_completion_tokens", "max_output_tokens", "n_predict")
SKIP = {"POST /downloads", "POST /admin/drain"}
SCALE = int(os.environ.get("HEARTH_FUZZ_SCALE", "1"))  # more cases when hunting bugs by hand
EXAMPLES = {"POST": 16 * SCALE, "GET": 6 * SCALE, "DELETE": 4 * SCALE}
NEGATIVE_EXAMPLES = 10 * SCALE


@pytest.fixture(scope="module")
def smol():
    yield from smol_server("--max-tokens", "4")  # requests without a token limit stay short too


def served(s):
    st, h, body = s.raw("GET", "/openapi.json")
    assert st == 200 and h["Content-Type"].startswith("application/json")
    return json.loads(body)


def test_served_and_complete(smol):
    spec = served(smol)
    assert spec == json.loads(SPEC.read_text())
    assert spec["openapi"].startswith("3.")
    # every API route of the router's table is described (web pages and path aliases aside)
    src = (ROOT / "src" / "server" / "router.c").read_text()
    routes = re.findall(r'\{"(GET|POST|DELETE)", "([^"]+)", (true|false)', src)
    assert len(routes) > 15
    web = {"/", "/chat", "/status", "/app/", "/v1/", "/chat/completions", "/completions"}
    for method, path, prefix in routes:
        if path in web:
            continue
        if prefix == "true":
            path += "{id}"
        assert method.lower() in spec["paths"].get(path, {}), f"{method} {path} is not in openapi.json"
    # and nothing is described that the server does not route
    for path, ops in spec["paths"].items():
        for method in ops:
            if f"{method.upper()} {path}" == "POST /admin/drain":
                continue  # routed (test_server_hardening_conn.py drains a server of its own)
            st, _, _ = smol.raw(method.upper(), path.replace("{id}", "x"), b"{}" if method == "post" else None)
            assert st not in (404, 405) or "{id}" in path, (method, path, st)


def resolve(x, spec):
    """x with every $ref replaced by a copy of its target (the description has no cycles)."""
    if isinstance(x, dict):
        if "$ref" in x:
            target = spec
            for k in x["$ref"][2:].split("/"):
                target = target[k]
            return resolve(target, spec)
        return {k: resolve(v, spec) for k, v in x.items()}
    if isinstance(x, list):
        return [resolve(v, spec) for v in x]
    return x


def small(x):
    """Caps for generated request bodies: short strings and lists, few free-form members, no
    extra members where the members are listed, token limits of at most 4."""
    if isinstance(x, list):
        return [small(v) for v in x]
    if not isinstance(x, dict):
        return x
    if "allOf" in x:  # one object of all the parts' members, so no part forbids another's
        parts, x = x["allOf"], {k: v for k, v in x.items() if k != "allOf"}
        x.update(type="object", properties={}, required=[])
        for p in parts:
            x["properties"].update(p.get("properties", {}))
            x["required"] += p.get("required", [])
    x = {k: (v if k in ("properties", "required", "enum", "const") else small(v)) for k, v in x.items()}
    if "properties" in x:
        x["properties"] = {k: small(v) for k, v in x["properties"].items()}
        for k in TOKEN_LIMITS:
            if k in x["properties"]:
                x["properties"][k]["maximum"] = 4
        x.setdefault("additionalProperties", False)
    types = x.get("type") if isinstance(x.get("type"), list) else [x.get("type")]
    if "string" in types:
        x["maxLength"] = min(x.get("maxLength", 24), 24)
    if "array" in types:
        x["maxItems"] = min(x.get("maxItems", 3), 3)
    if "object" in types and "properties" not in x:
        x["maxProperties"] = 2
    return x


def bounded(spec):
    """A copy whose request bodies stay small and cheap to answer (responses keep their schemas)."""
    out = json.loads(json.dumps(spec))
    for ops in out["paths"].values():
        for op in ops.values():
            for media in op.get("requestBody", {}).get("content", {}).values():
                media["schema"] = small(resolve(media["schema"], spec))
    return out


def run_cases(smol, op, mode, n, checks, failures):
    @settings(max_examples=n, deadline=None, derandomize=True, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=op.as_strategy(generation_mode=mode))
    def one(case):
        try:
            case.call_and_validate(base_url=smol.base, checks=checks, timeout=60)
        except Exception as e:  # noqa: BLE001 - collected, reported at the end
            failures.append(f"{op.label} [{mode.value}]: {str(e)[:1500]}")
    one()


def test_schemathesis(smol):
    schema = schemathesis.openapi.from_dict(bounded(served(smol)))
    failures, n_ops = [], 0
    positive = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    for result in schema.get_all_operations():
        op = result.ok()
        if op.label in SKIP:
            continue
        n_ops += 1
        run_cases(smol, op, GenerationMode.POSITIVE, EXAMPLES[op.method.upper()], positive, failures)
        if op.method.upper() == "POST":
            run_cases(smol, op, GenerationMode.NEGATIVE, NEGATIVE_EXAMPLES, [not_a_server_error], failures)
    assert n_ops == 29  # 24, POST /v1/embeddings, and the four /v1/adapters operations
    assert not failures, "\n\n".join(failures[:5])
    st, _, _ = smol.raw("GET", "/health")
    assert st == 200
    assert smol.stats()["generations"]["active"] == 0
