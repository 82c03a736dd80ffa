"""The pages of check-ins (issue 44, item 5): Settings → Check-ins and the proposal cards' actions."""

from django.urls import path

from check_ins.web import pages, proposal_cards

urlpatterns = [
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
