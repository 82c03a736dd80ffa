from django.urls import path

from conversations.web import characters_views, restore_views, usage_views, views

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", views.login_page, name="login"),
    path("logout/", views.logout_page, name="logout"),
    path("c/new/", views.new_chat, name="new-chat"),
    path("c/<str:conversation_id>/handoff/drop/", views.new_chat_handoff_drop_page, name="new-chat-handoff-drop"),
    path("c/<str:conversation_id>/", views.chat_page, name="chat"),
    path("c/<str:conversation_id>/window/", views.chat_window_fragment, name="chat-window"),
    path(
        "c/<str:conversation_id>/messages/<str:message_id>/fragment/",
        views.message_fragment,
        name="message-fragment",
    ),
    path(
        "c/<str:conversation_id>/messages/<str:message_id>/markdown/",
        views.message_markdown,
        name="message-markdown",
    ),
    path("c/<str:conversation_id>/provider-usage/", usage_views.provider_usage_fragment, name="provider-usage-fragment"),
    path("settings/", views.settings_page, name="settings"),
    path("settings/restore/", restore_views.restore_page, name="settings-restore"),
    path("settings/restore/<str:token>/", restore_views.restore_confirm, name="settings-restore-confirm"),
    path("settings/usage/", usage_views.usage_page, name="settings-usage"),
    path("characters/", characters_views.characters_page, name="characters"),
    path("characters/<int:character_id>/edit/", characters_views.character_edit_page, name="character-edit"),
    path("characters/<int:character_id>/delete/", characters_views.character_delete_page, name="character-delete"),
]
