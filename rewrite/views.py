"""Rewrite pages: batches (researchers estimate, then start them), a batch's progress and seeds,
the verification page (keyboard: rewrite/static/rewrite/verify.js), prompt templates with their
versions, and the fragment the item editor shows."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext, ngettext

from annotation.contract import item_payload
from annotation.selectors import get_item_for
from benchforge import permissions
from benchforge.errors import DomainError
from benchforge.inputs import optional_id, parse_id
from benchforge.navigation import changes_work_only
from benchforge.roles import ANNOTATOR, REVIEWER, role_required
from curation.selectors import get_benchmark_for
from llm.client import load_models

from . import selectors, services
from .forms import BatchForm, RejectForm, TemplateForm, VersionForm
from .models import BatchSeed, Rewrite
from .parsing import DROP_REASONS

# Keys of the reject reasons on the verification page, in the order Rewrite.Reason lists them.
REASON_KEYS = "12345"


def _endpoints() -> tuple[list[str], str]:
    try:
        return sorted(load_models()), ""
    except DomainError as exc:
        return [], exc.message


def _default_endpoint(names: list[str]) -> str:
    """GLM first: the endpoint a rewrite batch usually uses."""
    models = load_models() if names else {}
    for name in names:
        if models[name].provider == "zhipuai":
            return name
    return names[0] if names else ""


@role_required(REVIEWER)
def rewrite_home(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    form, estimate, endpoint_problem = None, None, ""
    if permissions.is_researcher(request.user):
        names, endpoint_problem = _endpoints()
        form = BatchForm(
            request.POST or None,
            endpoints=names,
            versions=selectors.template_versions(benchmark),
            initial={"endpoint": _default_endpoint(names)},
        )
        if request.method == "POST" and form.is_valid():
            try:
                if request.POST.get("action") == "start":
                    batch = services.start_batch(benchmark, user=request.user, **form.arguments())
                    seeds = batch.estimate["seeds"]
                    messages.success(
                        request,
                        ngettext(
                            "Rewrite batch %(number)s started over %(seeds)s seed.",
                            "Rewrite batch %(number)s started over %(seeds)s seeds.",
                            seeds,
                        )
                        % {"number": batch.number, "seeds": seeds},
                    )
                    return redirect("rewrite-batch", slug=slug, number=batch.number)
                estimate = services.estimate_batch(benchmark, **form.arguments())
            except DomainError as exc:
                messages.error(request, exc.message)
    elif request.method == "POST":
        raise PermissionDenied(gettext("Starting a rewrite batch needs the researcher role."))
    return render(
        request,
        "rewrite/home.html",
        {
            "benchmark": benchmark,
            "batches": selectors.batch_list(benchmark),
            "stats": selectors.rewrite_panel(benchmark),
            "to_verify": selectors.seeds_to_verify(benchmark, request.user).count(),
            "form": form,
            "estimate": estimate,
            "endpoint_problem": endpoint_problem,
        },
    )


@role_required(REVIEWER)
def batch_detail(request, slug, number):
    benchmark = get_benchmark_for(request.user, slug)
    batch = selectors.get_batch(benchmark, number)
    state = request.GET.get("state", "")
    if state not in BatchSeed.State.values:
        state = ""
    page = Paginator(selectors.batch_seeds(batch, state=state), 50).get_page(request.GET.get("page"))
    return render(
        request,
        "rewrite/batch.html",
        {
            "benchmark": benchmark,
            "batch": batch,
            "overview": selectors.batch_overview(batch),
            "job": batch.job,
            "can_resume": permissions.is_researcher(request.user),
            "page": page,
            "state": state,
            "states": BatchSeed.State.choices,
        },
    )


@role_required(REVIEWER)
def verify_next(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    seed = selectors.next_seed(benchmark, after=optional_id(request.GET.get("after")), user=request.user)
    if seed is None:
        messages.success(request, gettext("No rewrite is waiting for verification."))
        return redirect("rewrite-home", slug=slug)
    return redirect("rewrite-seed", slug=slug, item_id=seed.pk)


def _act(request, benchmark, seed) -> str:
    """Run the action of a POST on the verification page; returns the anchor to come back to."""
    action = request.POST.get("action", "")
    if action == "add":
        rewrite = services.add_manual(seed, user=request.user, text=request.POST.get("text", ""))
        messages.success(request, gettext("Manual rewrite added: another verifier approves it, like the model's."))
        return f"rewrite-{rewrite.pk}"
    rewrite = selectors.get_rewrite(benchmark, parse_id(request.POST.get("rewrite", ""), "rewrite"))
    if rewrite.seed_id != seed.pk:
        raise DomainError(gettext("That rewrite belongs to another seed."))
    if action == "approve":
        item = services.approve(rewrite, user=request.user)
        messages.success(request, gettext("Approved: it is now item #%(id)s.") % {"id": item.pk})
    elif action == "reject":
        form = RejectForm(request.POST)
        if not form.is_valid():
            raise DomainError(gettext("Choose a reason to reject (1-5)."))
        services.reject(rewrite, user=request.user, **form.cleaned_data)
        messages.success(
            request, gettext("Rejected: %(reason)s.") % {"reason": str(Rewrite.Reason(form.cleaned_data["reason"]).label).lower()}
        )
    elif action == "edit":
        services.edit(rewrite, user=request.user, text=request.POST.get("text", ""))
        messages.success(request, gettext("Edit saved: another verifier approves it (nobody approves their own words)."))
    else:
        raise DomainError(gettext("Unknown action."))
    return f"rewrite-{rewrite.pk}"


@role_required(REVIEWER)
@changes_work_only
def verify_seed(request, slug, item_id):
    benchmark = get_benchmark_for(request.user, slug)
    seed = selectors.get_seed(benchmark, item_id)
    if request.method == "POST":
        anchor = ""
        try:
            anchor = _act(request, benchmark, seed)
        except DomainError as exc:
            messages.error(request, exc.message)
        order = "?order=similarity" if request.POST.get("order") == "similarity" else ""
        return redirect(reverse("rewrite-seed", args=[slug, seed.pk]) + order + (f"#{anchor}" if anchor else ""))
    order = request.GET.get("order", "")
    rewrites = selectors.seed_rewrites(seed, order=order)
    for rewrite in rewrites:
        rewrite.yours = request.user.pk in rewrite.writer_ids  # another verifier approves it
    following = selectors.next_seed(benchmark, after=seed.pk, user=request.user)
    return render(
        request,
        "rewrite/verify.html",
        {
            "benchmark": benchmark,
            "seed": seed,
            "payload": item_payload(seed),
            "rewrites": rewrites,
            "order": order,
            "replies": selectors.seed_replies(seed),
            "batch_seed": selectors.seed_batch_state(seed),
            "reasons": [(code, label, key) for (code, label), key in zip(Rewrite.Reason.choices, REASON_KEYS)],
            "next_url": reverse("rewrite-seed", args=[slug, following.pk]) if following and following.pk != seed.pk else "",
            "refusal": None if permissions.may_review(request.user) else gettext("Verifying needs the reviewer role."),
            "counts": selectors.rewrite_count(seed),
            "drop_reasons": DROP_REASONS,
        },
    )


@role_required(REVIEWER)
def template_list(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    form = TemplateForm(request.POST or None) if permissions.is_researcher(request.user) else None
    if request.method == "POST":
        if form is None:
            raise PermissionDenied(gettext("Writing templates needs the researcher role."))
        if request.POST.get("action") == "defaults":
            services.ensure_default_templates(benchmark, user=request.user)
            return redirect("rewrite-templates", slug=slug)
        if form.is_valid():
            try:
                template = services.create_template(benchmark, user=request.user, **form.cleaned_data)
            except DomainError as exc:
                messages.error(request, exc.message)
            else:
                messages.success(request, gettext("Template '%(name)s' created.") % {"name": template.name})
                return redirect("rewrite-template", slug=slug, pk=template.pk)
    return render(
        request, "rewrite/templates.html", {"benchmark": benchmark, "templates": selectors.templates_of(benchmark), "form": form}
    )


@role_required(REVIEWER)
def template_detail(request, slug, pk):
    benchmark = get_benchmark_for(request.user, slug)
    template = selectors.get_template(benchmark, pk)
    latest = template.latest
    form = None
    if permissions.is_researcher(request.user):
        form = VersionForm(request.POST or None, initial={"text": latest.text if latest else ""})
    if request.method == "POST":
        if form is None:
            raise PermissionDenied(gettext("Editing templates needs the researcher role."))
        if form.is_valid():
            try:
                version = services.add_version(template, user=request.user, **form.cleaned_data)
            except DomainError as exc:
                messages.error(request, exc.message)
            else:
                messages.success(request, gettext("Saved as version %(number)s.") % {"number": version.number})
                return redirect("rewrite-template", slug=slug, pk=template.pk)
    return render(
        request,
        "rewrite/template.html",
        {"benchmark": benchmark, "template": template, "versions": template.versions.select_related("created_by"), "form": form},
    )


@role_required(ANNOTATOR)
def item_rewrites(request, slug, item_id):
    """Fragment for the item editor: how many approved rewrites a seed has, or whose rewrite it is."""
    item = get_item_for(request.user, slug, item_id)
    return render(
        request,
        "rewrite/_item_rewrites.html",
        {"item": item, "benchmark": item.benchmark, "counts": selectors.rewrite_count(item)},
    )
