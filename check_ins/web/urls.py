"""Routes of check-ins (issue 44): the check-ins and check-in proposals API (served under /api/), and the
pages, Settings → Check-ins and the proposal cards' actions (served under /)."""

from django.urls import path

from check_ins.web import api, pages, proposal_cards, proposals_api

api_urlpatterns = [
    path("check-ins/", api.CheckInListView.as_view(), name="api-check-ins"),
    path("check-ins/<str:check_in_id>/", api.CheckInDetailView.as_view(), name="api-check-in"),
    path("check-ins/<str:check_in_id>/run/", api.CheckInRunView.as_view(), name="api-check-in-run"),
    path("check-in-proposals/", proposals_api.CheckInProposalListView.as_view(), name="api-check-in-proposals"),
    path(
        "check-in-proposals/<str:proposal_id>/approve/",
        proposals_api.CheckInProposalApproveView.as_view(),
        name="api-check-in-proposal-approve",
    ),
    path(
        "check-in-proposals/<str:proposal_id>/dismiss/",
        proposals_api.CheckInProposalDismissView.as_view(),
        name="api-check-in-proposal-dismiss",
    ),
]

page_urlpatterns = [
    path("settings/check-ins/", pages.check_ins_page, name="settings-check-ins"),
    path("settings/check-ins/new/", pages.check_in_new, name="check-in-new"),
    path("settings/check-ins/<str:check_in_id>/", pages.check_in_edit, name="check-in-edit"),
    path("settings/check-ins/<str:check_in_id>/run/", pages.check_in_run_page, name="check-in-run"),
    path("settings/check-ins/<str:check_in_id>/pause/", pages.check_in_pause, name="check-in-pause"),
    path("settings/check-ins/<str:check_in_id>/resume/", pages.check_in_resume, name="check-in-resume"),
    path("settings/check-ins/<str:check_in_id>/delete/", pages.check_in_delete_page, name="check-in-delete"),
    path(
        "settings/check-ins/suggestions/<int:proposal_id>/<str:action>/",
        proposal_cards.proposal_action,
        name="check-in-proposal-action",
    ),
]
