"""The login and logout pages. Thin: the password check and the throttle live in `elion.base`."""

from __future__ import annotations

from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from elion.base import access
from elion.base.local_redirect import redirect_local
from elion.base.login_throttle import login_device_remember, login_failed, login_retry_after, login_succeeded


def login_page(request: HttpRequest) -> HttpResponse:
    error, status = "", 200
    if request.method == "POST":
        retry_after = login_retry_after(request)
        if retry_after is not None:
            response = render(
                request, "login.html", {"error": f"Too many wrong passwords; try again in {retry_after} s."}, status=429
            )
            response["Retry-After"] = str(retry_after)
            return response
        if access.check_owner_password(request.POST.get("password", "")):
            login_succeeded(request)
            access.owner_login(request)
            return login_device_remember(request, redirect_local(request.GET.get("next"), "/"))
        login_failed(request)
        error, status = "That password is not the owner's.", 401
    return render(request, "login.html", {"error": error}, status=status)


@require_POST
def logout_page(request: HttpRequest) -> HttpResponse:
    logout(request)
    return redirect("login")
