"""Structured-output requests: the reply schema wrapped in each server's dialect.

OpenAI's API takes ``{"type": "json_schema", "json_schema": {...}}``;
llama.cpp's server takes ``{"type": "json_object", "schema": ...}`` and turns the
schema into a sampling grammar, so every reply parses.
"""

from __future__ import annotations

from typing import Any

# Structured-output dialects a backend may speak; "off" asks for free text.
DIALECTS = ("off", "json_schema", "json_object")


def closed_object(properties: dict[str, Any]) -> dict[str, Any]:
    """An object with exactly `properties`, every one required."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def environment_schema(
    env_props: dict[str, Any], inventory_props: dict[str, Any]
) -> dict[str, Any]:
    """JSON schema of one environment as the LLM writes it (every field required)."""
    return closed_object(
        {
            "purpose": {"type": "string", "maxLength": 200},
            "environment_settings": closed_object(env_props),
            "inventory_settings": closed_object(inventory_props),
        }
    )


def reply_schema(environment: dict[str, Any], n: int, explain: bool) -> dict[str, Any]:
    """An object holding exactly `n` environments, plus a short explanation if asked."""
    properties: dict[str, Any] = {}
    if explain:
        properties["information_used"] = {"type": "string", "maxLength": 400}
    properties["environments"] = {
        "type": "array",
        "items": environment,
        "minItems": n,
        "maxItems": n,
    }
    return closed_object(properties)


def response_format(schema: dict[str, Any], dialect: str) -> dict[str, Any] | None:
    """The request's `response_format` for `dialect` (None for free text)."""
    if dialect == "off":
        return None
    if dialect == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "environments", "strict": True, "schema": schema},
        }
    if dialect == "json_object":
        return {"type": "json_object", "schema": schema}
    raise ValueError(f"structured-output dialect {dialect!r} unknown; use one of {DIALECTS}")
