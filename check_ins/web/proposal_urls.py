"""The API routes of check-in proposals (served under /api/)."""

from django.urls import path

from check_ins.web import proposals_api

urlpatterns = [
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
