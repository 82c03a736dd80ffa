from django.urls import path

from continuity.web import compaction_views

urlpatterns = [
    path("c/<str:conversation_id>/compact/", compaction_views.compact_page, name="conversation-compact"),
    path("c/<str:conversation_id>/compact/undo/", compaction_views.compaction_undo_page, name="conversation-compact-undo"),
]
