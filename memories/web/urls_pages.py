from django.urls import path

from memories.web import review, views

urlpatterns = [
    path("", views.memories_page, name="memories"),
    path("import/", views.import_page, name="memories-import"),
    path("suggestions/", review.suggestions_page, name="memory-suggestions"),
    path("suggestions/clear-dismissed/", review.clear_dismissed, name="memory-suggestions-clear"),
    path("suggestions/<int:proposal_id>/<str:action>/", review.proposal_action, name="memory-proposal-action"),
    path("in/<str:conversation_id>/", review.chat_memories_page, name="chat-memories"),
    path("<int:memory_id>/", review.memory_page, name="memory"),
    path("<int:memory_id>/edit/", views.edit_page, name="memory-edit"),
    path("<int:memory_id>/delete/", views.delete_page, name="memory-delete"),
    path("<int:memory_id>/move/", views.move_memory, name="memory-move"),
    path("refresh/<str:conversation_id>/", views.refresh_memory, name="memory-refresh"),
]
