"""Routes of Character Studio: the API (under /api/) and the pages (under /)."""

from django.urls import path

from conversations.web.characters import api, pages

api_urlpatterns = [
    path("characters/", api.CharacterListView.as_view(), name="api-characters"),
    path("characters/<str:character_id>/", api.CharacterDetailView.as_view(), name="api-character"),
]

page_urlpatterns = [
    path("characters/", pages.characters_page, name="characters"),
    path("characters/<int:character_id>/edit/", pages.character_edit_page, name="character-edit"),
    path("characters/<int:character_id>/delete/", pages.character_delete_page, name="character-delete"),
]
