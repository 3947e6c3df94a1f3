"""Staff pages beside the admin: the search playground and the saved eval reports (thin views)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.templatetags.static import static

from knowledge.errors import KnowledgeError, NotFound
from knowledge.pages.permissions import VIEW_DOCUMENTS, VIEW_EVAL_REPORTS, require
from knowledge.pages.playground import (
    PlaygroundForm,
    PlaygroundOutcome,
    identity_allowed,
    identity_permissions,
    playground_search,
)
from knowledge.selectors.eval_reports import eval_report_get, eval_run_get, eval_runs_with_problems
from retrieval_backends.base import BackendUnavailable

logger = logging.getLogger(__name__)


def _page(request: HttpRequest, template: str, title: str, **context: object) -> HttpResponse:
    return render(request, template, {**admin.site.each_context(request), "title": title, **context})


@staff_member_required
@require(VIEW_DOCUMENTS, "use the search playground")
def playground(request: HttpRequest) -> HttpResponse:
    """GET only: the form's fields are the URL's parameters, so a search can be linked and re-run.

    Without a query the parameters only preselect choices (e.g. `?tenant=acme`). The identities offered
    are those the user may search as; asking for another one is a 403.
    """
    searching = "q" in request.GET
    may = identity_permissions(request.user)
    if searching and not identity_allowed(request.GET.get("identity", ""), request.user):
        raise PermissionDenied("you may not search as that identity")
    form = (
        PlaygroundForm(request.GET, may=may)
        if searching
        else PlaygroundForm(initial=request.GET.dict(), may=may)
    )
    outcome: PlaygroundOutcome | None = None
    if form.is_valid():
        try:
            outcome = playground_search(data=form.cleaned_data, actor=request.user)
        except KnowledgeError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        except BackendUnavailable as exc:  # the details go to the log, not the page
            logger.warning("playground search failed on an unavailable backend: %s", exc)
            form.add_error(None, "The search backend is unavailable; retry in a few seconds.")
    return _page(request, "knowledge/playground.html", "Search playground", form=form, outcome=outcome)


@staff_member_required
@require(VIEW_EVAL_REPORTS, "read the eval reports")
def eval_reports(request: HttpRequest) -> HttpResponse:
    folder = settings.KNOWLEDGE_EVAL_REPORTS_DIR
    runs = eval_runs_with_problems(folder=folder)
    return _page(request, "knowledge/eval_reports.html", "Retrieval eval reports", runs=runs, folder=folder)


@staff_member_required
@require(VIEW_EVAL_REPORTS, "read the eval reports")
def eval_report(request: HttpRequest, name: str) -> HttpResponse:
    try:
        report = eval_report_get(folder=settings.KNOWLEDGE_EVAL_REPORTS_DIR, name=name)
    except NotFound as exc:
        raise Http404(exc.message) from None
    return _page(request, "knowledge/eval_report.html", f"Eval report {report.title}", report=report)


@staff_member_required
@require(VIEW_EVAL_REPORTS, "read the eval reports")
def eval_chart(request: HttpRequest, name: str) -> FileResponse:
    try:
        chart = eval_run_get(folder=settings.KNOWLEDGE_EVAL_REPORTS_DIR, name=name).chart
    except NotFound as exc:
        raise Http404(exc.message) from None
    if chart is None:
        raise Http404(f"the eval report {name!r} has no chart")
    return FileResponse(chart.open("rb"), content_type="image/png")


def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico: the icon the pages link (the static URL is resolved per request: manifest names)."""
    return HttpResponseRedirect(static("knowledge/favicon.svg"))
