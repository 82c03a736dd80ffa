"""Routes of folders: the API (under /api/) and the pages' actions (under /)."""

from django.urls import path

from conversations.web.folders import api, pages

api_urlpatterns = [
    path("folders/", api.FolderListView.as_view(), name="api-folders"),
    path("folders/<int:folder_id>/", api.FolderDetailView.as_view(), name="api-folder"),
]

page_urlpatterns = [
    path("folders/new/", pages.folder_create_page, name="folder-create"),
    path("folders/hidden/", pages.hidden_folders_page, name="hidden-folders"),
    path("folders/<int:folder_id>/visibility/", pages.folder_visibility_page, name="folder-visibility"),
    path("folders/<int:folder_id>/rename/", pages.folder_rename_page, name="folder-rename"),
    path("folders/<int:folder_id>/delete/", pages.folder_delete_page, name="folder-delete"),
]
