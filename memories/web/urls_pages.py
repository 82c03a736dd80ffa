from django.urls import path

from memories.web import views

urlpatterns = [
    path("", views.memories_page, name="memories"),
    path("import/", views.import_page, name="memories-import"),
    path("<int:memory_id>/edit/", views.edit_page, name="memory-edit"),
    path("<int:memory_id>/delete/", views.delete_page, name="memory-delete"),
    path("<int:memory_id>/move/", views.move_memory, name="memory-move"),
    path("refresh/<str:conversation_id>/", views.refresh_memory, name="memory-refresh"),
]
