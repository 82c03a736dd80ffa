from django.urls import path

from archive.web import pages

urlpatterns = [
    path("archive/", pages.archive_page, name="archive"),
    path("archive/<int:document_id>/", pages.document_page, name="archive-document"),
    path("archive/<int:document_id>/delete/", pages.document_delete, name="archive-document-delete"),
    path("library/", pages.library_page, name="library"),
    path("library/<int:file_id>/", pages.library_file_page, name="library-file"),
    path("library/<int:file_id>/delete/", pages.library_file_delete, name="library-file-delete"),
]
