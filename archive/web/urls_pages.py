from django.urls import path

from archive.web import views

urlpatterns = [
    path("archive/", views.archive_page, name="archive"),
    path("archive/<int:document_id>/", views.document_page, name="archive-document"),
    path("archive/<int:document_id>/delete/", views.document_delete, name="archive-document-delete"),
    path("library/", views.library_page, name="library"),
    path("library/<int:file_id>/", views.library_file_page, name="library-file"),
    path("library/<int:file_id>/delete/", views.library_file_delete, name="library-file-delete"),
]
