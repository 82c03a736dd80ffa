from django.urls import path

from memories.web import pages, review

urlpatterns = [
    path("", pages.memories_page, name="memories"),
    path("import/", pages.import_page, name="memories-import"),
    path("suggestions/", review.suggestions_page, name="memory-suggestions"),
    path("suggestions/clear-dismissed/", review.clear_dismissed, name="memory-suggestions-clear"),
    path("suggestions/<int:proposal_id>/<str:action>/", review.proposal_action, name="memory-proposal-action"),
    path("in/<str:conversation_id>/", review.chat_memories_page, name="chat-memories"),
    path("<int:memory_id>/", review.memory_page, name="memory"),
    path("<int:memory_id>/edit/", pages.edit_page, name="memory-edit"),
    path("<int:memory_id>/delete/", pages.delete_page, name="memory-delete"),
    path("<int:memory_id>/move/", pages.move_memory, name="memory-move"),
    path("refresh/<str:conversation_id>/", pages.refresh_memory, name="memory-refresh"),
]
