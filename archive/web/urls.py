"""Routes of the archive and the library: the API (served under /api/) and the pages (served under /)."""

from django.urls import path

from archive.web import api, pages

api_urlpatterns = [
    path("archive/documents/", api.ArchiveDocumentListView.as_view(), name="api-archive-documents"),
    path("archive/documents/<str:document_id>/", api.ArchiveDocumentDetailView.as_view(), name="api-archive-document"),
    path(
        "archive/documents/<str:document_id>/continue/",
        api.ArchiveDocumentContinueView.as_view(),
        name="api-archive-document-continue",
    ),
    path(
        "archive/documents/<str:document_id>/attachments/<str:sha256>/",
        api.ArchiveDocumentAttachmentView.as_view(),
        name="api-archive-document-attachment",
    ),
    path("archive/import/chatgpt/", api.ChatGPTImportView.as_view(), name="api-archive-import-chatgpt"),
    path("archive/import/claude/", api.ClaudeImportView.as_view(), name="api-archive-import-claude"),
    path("archive/uploads/", api.UploadPiecesView.as_view(), name="api-archive-uploads"),
    path("archive/uploads/<str:upload_id>/", api.UploadPieceView.as_view(), name="api-archive-upload"),
    path("archive/imports/<str:job_id>/", api.ImportJobView.as_view(), name="api-archive-import-job"),
    path("archive/imports/<str:job_id>/cancel/", api.ImportJobCancelView.as_view(), name="api-archive-import-job-cancel"),
    path("archive/imports/<str:job_id>/resume/", api.ImportJobResumeView.as_view(), name="api-archive-import-job-resume"),
    path("archive/search/", api.ArchiveSearchView.as_view(), name="api-archive-search"),
    path("library/files/", api.LibraryFileListView.as_view(), name="api-library-files"),
    path("library/files/<str:file_id>/", api.LibraryFileDetailView.as_view(), name="api-library-file"),
]

page_urlpatterns = [
    path("archive/", pages.archive_page, name="archive"),
    path("archive/<int:document_id>/", pages.document_page, name="archive-document"),
    path("archive/<int:document_id>/delete/", pages.document_delete, name="archive-document-delete"),
    path("library/", pages.library_page, name="library"),
    path("library/<int:file_id>/", pages.library_file_page, name="library-file"),
    path("library/<int:file_id>/delete/", pages.library_file_delete, name="library-file-delete"),
]
