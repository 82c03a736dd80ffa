"""The published OpenAPI schema is complete, and Django's deployment check is clean (issue 41, item 19).

- `manage.py spectacular --validate --fail-on-warn` passes: any schema warning (an operation without
  its security, a view whose serializer cannot be guessed, an operationId collision, an enum name
  collision) fails the suite.
- Every operation but the public ones (health, login) declares the owner's credentials, either one;
  the attachment upload documents its multipart form; operationIds are unique.
- `manage.py check --deploy`, protection on behind a TLS proxy, reports nothing at warning level
  (security.W005/W008/W021 are silenced in settings, each with its reason).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from elion.web.api_schema import OWNER_SECURITY

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_OPERATIONS = {("/api/health/", "get"), ("/api/auth/login/", "post")}


@pytest.fixture(scope="module")
def schema(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("schema") / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(path))  # raises on any warning
    return yaml.safe_load(path.read_text())


def _operations(schema: dict) -> dict[tuple[str, str], dict]:
    return {(path, method): operation for path, operations in schema["paths"].items()
            for method, operation in operations.items() if isinstance(operation, dict)}


def test_every_operation_but_the_public_ones_declares_the_owners_credentials(schema):
    operations = _operations(schema)
    assert len(operations) > 80
    for key, operation in operations.items():
        if key in PUBLIC_OPERATIONS:
            assert operation["security"] == [{}], key
        else:
            assert operation.get("security") == OWNER_SECURITY, key
    schemes = schema["components"]["securitySchemes"]
    assert schemes["ownerToken"] == {**schemes["ownerToken"], "type": "http", "scheme": "bearer"}
    assert schemes["ownerSession"] == {**schemes["ownerSession"], "type": "apiKey", "in": "cookie", "name": "sessionid"}


def test_the_attachment_upload_is_documented_and_operation_ids_are_unique(schema):
    upload = schema["paths"]["/api/attachments/"]["post"]
    form = upload["requestBody"]["content"]["multipart/form-data"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert set(schema["components"]["schemas"][form]["properties"]) == {"file", "conversation_id"}
    created = upload["responses"]["201"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert set(schema["components"]["schemas"][created]["properties"]) == {
        "id", "sha256", "name", "mime", "size", "generated"}
    ids = [operation["operationId"] for operation in _operations(schema).values()]
    assert len(ids) == len(set(ids))
    assert schema["paths"]["/api/conversations/"]["get"]["operationId"] == "conversations_list"


def test_the_deployment_check_is_clean_behind_a_tls_proxy(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("ELION_TESTING",)}
    env.update(ELION_DATA_DIR=str(tmp_path), ELION_OWNER_PASSWORD="correct horse", ELION_API_TOKEN="token",
               ELION_BEHIND_TLS_PROXY="1", ELION_ALLOWED_HOSTS="chat.example.org",
               ELION_TRUSTED_ORIGINS="https://chat.example.org", DJANGO_SETTINGS_MODULE="elion.settings")
    env.pop("DJANGO_DEBUG", None)
    done = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (3 silenced)." in done.stdout
