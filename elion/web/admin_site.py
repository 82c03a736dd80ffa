"""The Django admin with a "Tools" section for owner maintenance screens.

Apps register a tool (a plain view) with `admin.site.register_tool(...)` in
their `admin.py`; it is served under `/admin/tools/<slug>/` behind the
admin's own login check and listed under "Tools" on the index and sidebar.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, URLPattern, URLResolver, path, reverse

TOOLS_LABEL = "tools"


@dataclass(frozen=True)
class AdminTool:
    name: str
    slug: str
    view: Callable


class ElionAdminSite(admin.AdminSite):
    site_header = "Elion administration"
    site_title = "Elion admin"

    def __init__(self, name: str = "admin") -> None:
        super().__init__(name)
        self._tools: dict[str, AdminTool] = {}

    def register_tool(self, *, name: str, slug: str, view: Callable) -> None:
        self._tools[slug] = AdminTool(name=name, slug=slug, view=view)

    def get_urls(self) -> list[URLPattern | URLResolver]:
        tools = [
            path("tools/", self.admin_view(self.tools_index), name="tools"),
            *(
                path(f"tools/{tool.slug}/", self.admin_view(tool.view), name=f"tool-{tool.slug}")
                for tool in self._tools.values()
            ),
        ]
        return tools + super().get_urls()

    def tools_index(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        return self.app_index(request, TOOLS_LABEL, extra_context)

    def _tools_app(self) -> dict | None:
        if not self._tools:
            return None
        try:
            app_url = reverse(f"{self.name}:tools", current_app=self.name)
        except NoReverseMatch:  # URLs not loaded from this site
            return None
        models = [
            {
                "name": tool.name,
                "object_name": tool.slug,
                "admin_url": reverse(f"{self.name}:tool-{tool.slug}", current_app=self.name),
                "add_url": None,
                "view_only": True,
                "perms": {"add": False, "change": False, "delete": False, "view": True},
            }
            for tool in sorted(self._tools.values(), key=lambda tool: tool.name)
        ]
        return {
            "name": "Tools",
            "app_label": TOOLS_LABEL,
            "app_url": app_url,
            "has_module_perms": True,
            "models": models,
        }

    def get_app_list(self, request: HttpRequest, app_label: str | None = None) -> list[dict]:
        tools = self._tools_app() if app_label in (None, TOOLS_LABEL) else None
        if app_label == TOOLS_LABEL:
            return [tools] if tools else []
        app_list = super().get_app_list(request, app_label)
        return app_list + [tools] if tools and request.user.is_staff else app_list


class ElionAdminConfig(AdminConfig):
    default_site = "elion.web.admin_site.ElionAdminSite"
