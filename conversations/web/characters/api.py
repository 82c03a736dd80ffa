"""HTTP API for Character Studio (docs/api.md "Folders and characters").

`GET|POST /api/characters/`, `PATCH|DELETE /api/characters/{id}/`. Thin: the
rules (and the prompt rebuild every change causes) live in
`conversations.services.characters`.
"""

from __future__ import annotations

from django.http import HttpRequest
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations.services import characters
from elion.base.api_errors import ErrorSerializer
from elion.base.errors import InvalidInput


class CharacterSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    image_guidance = serializers.CharField(allow_blank=True)


class CharacterWriteSerializer(serializers.Serializer):
    name = serializers.CharField(required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    image_guidance = serializers.CharField(required=False, allow_blank=True)


class CharacterListSerializer(serializers.Serializer):
    results = CharacterSerializer(many=True)


def character_fields(request: HttpRequest) -> dict:
    """The body's fields as sent; the service rejects unknown ones and bad values."""
    if not isinstance(request.data, dict):
        raise InvalidInput("The body must be a JSON object.", code="malformed_request")
    return dict(request.data)


class CharacterListView(APIView):
    @extend_schema(operation_id="characters_list", responses=CharacterListSerializer)
    def get(self, request: Request) -> Response:
        return Response({"results": [characters.character_repr(c) for c in characters.characters_list()]})

    @extend_schema(request=CharacterWriteSerializer, responses={201: CharacterSerializer, 400: ErrorSerializer})
    def post(self, request: Request) -> Response:
        fields = character_fields(request)
        characters.clean_character_fields(fields, creating=True)  # unknown fields → 400 before writing
        character = characters.character_create(
            name=fields.get("name"),
            description=fields.get("description", ""),
            image_guidance=fields.get("image_guidance", ""),
        )
        return Response(characters.character_repr(character), status=status.HTTP_201_CREATED)


class CharacterDetailView(APIView):
    @extend_schema(responses={200: CharacterSerializer, 404: ErrorSerializer})
    def get(self, request: Request, character_id: str) -> Response:
        return Response(characters.character_repr(characters.access_character(character_id)))

    @extend_schema(
        request=CharacterWriteSerializer,
        responses={200: CharacterSerializer, 400: ErrorSerializer, 404: ErrorSerializer},
    )
    def patch(self, request: Request, character_id: str) -> Response:
        characters.access_character(character_id)  # an unknown id is a 404 whatever the body says
        character = characters.character_edit(character_id=character_id, changes=character_fields(request))
        return Response(characters.character_repr(character))

    @extend_schema(responses={204: None, 404: ErrorSerializer})
    def delete(self, request: Request, character_id: str) -> Response:
        characters.character_delete(character_id=character_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
