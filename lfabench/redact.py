"""Keeping secrets out of records: values a config reads from the environment are recorded as written.

An override such as ``dataset.params.token=${oc.env:API_TOKEN}`` gives the plugin the variable's value, but
``result.json`` (and every board and page built from it) holds the expression ``${oc.env:API_TOKEN}``, never
the value: the record's ``setting`` keeps the config as written, and its ``config`` (resolved) gets the
expression back in every field whose written form reads the environment (:func:`redact_config`).

Before records are published, :func:`secret_problems` checks each one: a field that still holds what an
environment interpolation resolved to (a record of an lfabench without this redaction), or any string holding
the value of one of this machine's environment variables whose name says it is a secret (``*TOKEN*``,
``*SECRET*``, ``*PASSWORD*``, ``*KEY*``...), is refused, naming the record and the field.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

#: OmegaConf resolvers that read the environment: ``oc.env`` and the deprecated ``env``.
ENV_INTERPOLATION = re.compile(r"\$\{\s*(oc\.env|env)\s*:")

#: Environment variable names taken for secrets when their value shows up in a record.
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_?KEY|AUTH|_KEY$",
                         re.IGNORECASE)

#: Shorter values are not searched for (they would match ordinary text, e.g. a value of ``1``).
MIN_SECRET_LENGTH = 8


def reads_environment(value: Any) -> bool:
    """True when ``value`` is a string holding an environment interpolation (``${oc.env:NAME}``, ``${env:NAME}``)."""
    return isinstance(value, str) and ENV_INTERPOLATION.search(value) is not None


def env_fields(written: Any) -> Iterator[tuple[str, str]]:
    """``(dotted field, expression)`` of every string of the config as written that reads the environment."""
    return ((where, text) for where, text in string_fields(written) if reads_environment(text))


def redact_config(resolved: Any, written: Any) -> Any:
    """A copy of the ``resolved`` config in which every field whose ``written`` form reads the environment holds
    that written form instead of its value; other fields are copied as they are."""
    if reads_environment(written):
        return written
    if isinstance(resolved, dict) and isinstance(written, dict):
        return {k: redact_config(v, written.get(k)) for k, v in resolved.items()}
    if isinstance(resolved, list) and isinstance(written, (list, tuple)) and len(written) == len(resolved):
        return [redact_config(v, w) for v, w in zip(resolved, written)]
    if isinstance(resolved, dict):
        return {k: redact_config(v, None) for k, v in resolved.items()}
    if isinstance(resolved, list):
        return [redact_config(v, None) for v in resolved]
    return resolved


def string_fields(value: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """``(dotted field, text)`` of every string in a nested structure of dicts, lists and tuples
    (``a.b[2].c``)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from string_fields(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from string_fields(v, f"{where}[{i}]")
    elif isinstance(value, str):
        yield where, value


def _field(record: Any, dotted: str) -> Any:
    value = record
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", dotted):
        if part.startswith("[") and isinstance(value, list):
            i = int(part[1:-1])
            value = value[i] if i < len(value) else None
        elif isinstance(value, dict):
            value = value.get(part)
        else:
            return None
    return value


def secret_problems(record: dict, environ: dict[str, str] | None = None) -> list[str]:
    """Why ``record`` must not be published: ``"<field> ..."`` for each secret it holds (empty when none)."""
    problems = []
    setting = record.get("setting") or {}
    config = record.get("config") or {}
    for where, expression in env_fields(setting):
        resolved = _field(config, where)
        if resolved is not None and resolved != expression:
            problems.append(f"config.{where} holds the value of {expression} (read from the environment)")
    environ = os.environ if environ is None else environ
    secrets = {name: value for name, value in environ.items()
               if SECRET_NAME.search(name) and len(value) >= MIN_SECRET_LENGTH}
    for where, text in string_fields(record):
        for name, value in secrets.items():
            if value in text:
                problems.append(f"{where} holds the value of the environment variable ${name}")
    return problems
