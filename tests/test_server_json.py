"""server.json, the MCP registry manifest, stays in step with the package: name, version, how to
run it, and one entry per environment variable the server reads, with defaults that really are
the defaults. The registry's schema (2025-12-11) is checked field by field, without the network."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from mcp_memory_server import __version__
from mcp_memory_server.config import ENV_VARS, Config, EnvVar
from mcp_memory_server.errors import InvalidInput

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
# The registry's schema at SCHEMA, its validation keywords copied (tests/data/README.md says how).
SCHEMA_COPY = Path(__file__).parent / "data" / "server.schema.json"
INPUT_FIELDS = {"name", "description", "isRequired", "format", "default", "choices", "isSecret", "placeholder", "value"}


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def project() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        data: dict[str, Any] = tomllib.load(handle)["project"]
    return data


@pytest.fixture(scope="module")
def validator() -> Draft7Validator:
    schema = json.loads(SCHEMA_COPY.read_text(encoding="utf-8"))
    assert schema["$id"] == SCHEMA
    Draft7Validator.check_schema(schema)
    return Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)


def test_server_json_is_valid_against_the_registry_schema(manifest: dict[str, Any], validator: Draft7Validator) -> None:
    errors = [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in validator.iter_errors(manifest)]
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda m: m.pop("name"), "name"),
        (lambda m: m.update(name="no-slash"), "name"),
        (lambda m: m.update(description="x" * 101), "description"),
        (lambda m: m["packages"][0].update(version="latest"), "version"),
        (lambda m: m["packages"][0].pop("transport"), "transport"),
        (lambda m: m["packages"][0].update(transport={"type": "carrier-pigeon"}), "transport"),
        (lambda m: m["packages"][0]["environmentVariables"][0].update(format="path"), "format"),
        (lambda m: m["packages"][0]["environmentVariables"][0].update(isSecret="no"), "isSecret"),
        (lambda m: m["packages"][0]["environmentVariables"][0].pop("name"), "name"),
    ],
)
def test_the_schema_copy_rejects_what_the_registry_rejects(
    manifest: dict[str, Any], validator: Draft7Validator, change: Any, where: str
) -> None:
    broken = json.loads(json.dumps(manifest))
    change(broken)
    errors = list(validator.iter_errors(broken))
    assert errors and any(where in "/".join(map(str, e.absolute_path)) + e.message for e in errors), errors


def test_server_fields_follow_the_registry_schema(manifest: dict[str, Any]) -> None:
    assert manifest["$schema"] == SCHEMA
    for field in ("name", "description", "version"):
        assert isinstance(manifest.get(field), str) and manifest[field], f"{field} is required"
    assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", manifest["name"])
    assert 3 <= len(manifest["name"]) <= 200
    assert 1 <= len(manifest["description"]) <= 100, "the registry rejects descriptions over 100 characters"
    assert 1 <= len(manifest.get("title", "x")) <= 100


def test_versions_agree(manifest: dict[str, Any], project: dict[str, Any]) -> None:
    assert manifest["version"] == __version__ == project["version"]
    assert [p["version"] for p in manifest["packages"]] == [__version__]


def test_the_package_is_the_pypi_package_run_with_uvx_over_stdio(
    manifest: dict[str, Any], project: dict[str, Any]
) -> None:
    (package,) = manifest["packages"]
    assert package["registryType"] == "pypi"
    assert package["identifier"] == project["name"]
    assert package["runtimeHint"] == "uvx"
    assert package["transport"] == {"type": "stdio"}
    assert project["name"] in project["scripts"], "uvx runs the console script named like the package"
    assert manifest["name"].rsplit("/", 1)[1] == project["name"] == "jiyi", "the registry name ends in the package's"


def test_environment_variables_are_exactly_config_env_vars(manifest: dict[str, Any]) -> None:
    (package,) = manifest["packages"]
    assert [v["name"] for v in package["environmentVariables"]] == [v.name for v in ENV_VARS]


def _is_literal(var: EnvVar) -> bool:
    """Whether `var.default` is a value the variable could be set to and mean the default (the
    paths' defaults are descriptions such as 'platform data dir/...')."""
    try:
        configured = Config.from_env({var.name: var.default})
    except InvalidInput:
        return False
    return bool(var.read(configured) == var.read(Config.from_env({})))


def test_each_environment_variable_is_described_optional_and_has_its_real_default(manifest: dict[str, Any]) -> None:
    (package,) = manifest["packages"]
    entries = {v["name"]: v for v in package["environmentVariables"]}
    for var in ENV_VARS:
        entry = entries[var.name]
        assert set(entry) <= INPUT_FIELDS, f"{var.name}: fields outside the schema {set(entry) - INPUT_FIELDS}"
        assert isinstance(entry["description"], str) and entry["description"], f"{var.name} has no description"
        assert entry["isRequired"] is False, f"{var.name}: the server runs without it"
        assert entry["isSecret"] is var.secret
        assert entry.get("format", "string") in ("string", "number", "boolean", "filepath")
        if _is_literal(var):
            assert entry.get("default") == var.default, f"{var.name}: default should be {var.default!r}"
        else:
            assert "default" not in entry, f"{var.name}: {var.default!r} is not a value to set"
        if entry.get("format") == "number":
            float(entry["default"])
        for choice in entry.get("choices", []):
            Config.from_env({var.name: choice})  # every offered choice is accepted


def test_the_readme_carries_the_registry_ownership_marker(manifest: dict[str, Any]) -> None:
    # The registry proves that the PyPI package belongs to this server by finding
    # "mcp-name: <name>" in the package's description, which is the README.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.findall(r"mcp-name: (\S+)", readme) == [manifest["name"]]
