"""The owner's authentication as the published OpenAPI schema (`/api/schema/`) declares it (issue 41, item 19).

drf-spectacular knows DRF's own authentication classes, not `elion.base.access.OwnerAuthentication`, so
no operation declared its security (54 warnings) and clients generated from the schema sent no
credentials. Either credential is enough (OR): `Authorization: Bearer $ELION_API_TOKEN`, or the
owner's session cookie from `POST /api/auth/login/` (writes then need the CSRF token). With owner
protection off the app serves loopback only and asks for neither. Imported by `ElionConfig.ready`.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension

from elion.base.access import PUBLIC_PATHS

TOKEN_SCHEME = "ownerToken"
SESSION_SCHEME = "ownerSession"
OWNER_SECURITY = [{TOKEN_SCHEME: []}, {SESSION_SCHEME: []}]  # either credential


class OwnerAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "elion.base.access.OwnerAuthentication"
    name = [TOKEN_SCHEME, SESSION_SCHEME]

    def get_security_requirement(self, auto_schema: object) -> list[dict[str, list]]:
        return OWNER_SECURITY  # either one

    def get_security_definition(self, auto_schema: object) -> list[dict]:
        return [
            {
                "type": "http",
                "scheme": "bearer",
                "description": "The API token: `Authorization: Bearer $ELION_API_TOKEN` (set with ELION_OWNER_PASSWORD).",
            },
            {
                "type": "apiKey",
                "in": "cookie",
                "name": settings.SESSION_COOKIE_NAME,
                "description": "The owner's session from `POST /api/auth/login/`; a write also sends the "
                               "`X-CSRFToken` header with the `csrftoken` cookie's value.",
            },
        ]


def owner_security_on_every_operation(result: dict, generator: object, request: object, public: bool) -> dict:
    """A postprocessing hook, after the ones that write operations by hand (the streaming send, retry,
    watch and stop): every operation that declares no security needs the owner, except the public paths."""
    for path, operations in result.get("paths", {}).items():
        if path.startswith(PUBLIC_PATHS):
            continue
        for operation in operations.values():
            if isinstance(operation, dict) and "security" not in operation:
                operation["security"] = OWNER_SECURITY
    return result
