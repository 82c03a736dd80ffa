from django.urls import path

from conversations.web.visibility import pages as views

urlpatterns = [
    path("search/", views.search_page, name="search"),
    path("trash/", views.trash_page, name="trash"),
    path("folders/new/", views.folder_create_page, name="folder-create"),
    path("folders/hidden/", views.hidden_folders_page, name="hidden-folders"),
    path("folders/<int:folder_id>/visibility/", views.folder_visibility_page, name="folder-visibility"),
    path("folders/<int:folder_id>/rename/", views.folder_rename_page, name="folder-rename"),
    path("folders/<int:folder_id>/delete/", views.folder_delete_page, name="folder-delete"),
    path("c/<str:conversation_id>/trash/", views.conversation_trash_page, name="conversation-trash"),
    path("c/<str:conversation_id>/restore/", views.conversation_restore_page, name="conversation-restore"),
    path(
        "c/<str:conversation_id>/delete-forever/",
        views.conversation_delete_forever_page,
        name="conversation-delete-forever",
    ),
    path(
        "c/<str:conversation_id>/release-shield/",
        views.conversation_release_shield_page,
        name="conversation-release-shield",
    ),
    path("c/<str:conversation_id>/keep/", views.conversation_keep_page, name="conversation-keep"),
    path("c/<str:conversation_id>/move/", views.conversation_move_page, name="conversation-move"),
]
