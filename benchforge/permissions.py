"""Who may do what: the one module views, the API, selectors, services and templates ask.

Roles (benchforge.roles) are nested: annotator < reviewer < researcher. On top of roles:
- a benchmark is seen by its members, and by every researcher (they own benchmarks);
- an item is edited by its author or assignee while it is work in progress, by a researcher at
  any stage before release, and by nobody once released;
- an item is reviewed by a reviewer or researcher who is a member and did not write it: nobody
  reviews their own work;
- researchers act on benchmarks (taxonomy, members, imports, jobs, LLM runs, releases).

Item rules read the item's own facts (`author_id`, `assignee_id`, `is_released`,
`is_work_in_progress`, `status_label`), so this module needs no app and every app can ask it.
A *refusal* is the reason a person is refused (a sentence naming what would be needed), or None.
"""

from django.db.models import Q
from django.utils.translation import gettext as _

from .errors import NotAllowed
from .roles import ANNOTATOR, RESEARCHER, REVIEWER, ROLE_LABELS, has_role, user_role


def is_researcher(user) -> bool:
    return user_role(user) == RESEARCHER


def may_review(user) -> bool:
    """The reviewer role (or researcher): may review others' work."""
    return has_role(user, REVIEWER)


def require(refusal: str | None) -> None:
    if refusal:
        raise NotAllowed(refusal)


def researcher_refusal(user, action: str) -> str | None:
    """`action` completes "... needs the researcher role", e.g. "Assigning work"."""
    return None if is_researcher(user) else f"{action} needs the researcher role."


def require_researcher(user, action: str) -> None:
    require(researcher_refusal(user, action))


# ---- benchmarks ---------------------------------------------------------------------------------


def benchmark_scope(user, via: str = "") -> Q | None:
    """A filter keeping the rows (benchmarks, or rows reaching one through `via`, e.g.
    "benchmark__") the user may see; None when they may see none (no role)."""
    role = user_role(user)
    if role == RESEARCHER:
        return Q()
    if role is None:
        return None
    return Q(**{f"{via}members": user})


def visible(queryset, user, via: str = ""):
    """`queryset` narrowed to what the user may see (see benchmark_scope)."""
    scope = benchmark_scope(user, via)
    return queryset.none() if scope is None else queryset.filter(scope)


# Rows below curation hold a benchmark's id, not a relation (jobs): curation registers how to find
# the ids of the benchmarks a user belongs to.
_member_benchmark_ids = None


def register_member_benchmark_ids(find) -> None:
    """`find(user)` -> the ids of the benchmarks `user` is a member of (a list or a queryset of ids)."""
    global _member_benchmark_ids
    _member_benchmark_ids = find


def visible_by_id(queryset, user, field: str = "benchmark_id"):
    """`queryset` narrowed to the rows whose benchmark (its id in `field`) the user may see."""
    role = user_role(user)
    if role == RESEARCHER:
        return queryset
    if role is None or _member_benchmark_ids is None:
        return queryset.none()
    return queryset.filter(**{f"{field}__in": _member_benchmark_ids(user)})


def is_member(user, benchmark) -> bool:
    """May work in `benchmark`: a researcher, or an annotator (or reviewer) among its members."""
    if is_researcher(user):
        return True
    return has_role(user, ANNOTATOR) and benchmark.members.filter(pk=user.pk).exists()


# ---- items --------------------------------------------------------------------------------------


def item_edit_refusal(user, item, *, membership_checked: bool = False) -> str | None:
    """Why `user` may not change `item`. `membership_checked`: the caller got the item through a
    selector that already refused non-members."""
    if item.is_released:
        return _("Item #%(id)s is released; released items never change.") % {"id": item.pk}
    role = user_role(user)
    if role is None:
        return _("You need a role on this platform to edit items.")
    if role == RESEARCHER:
        return None
    if not membership_checked and not is_member(user, item.benchmark):
        return _("You are not a member of this benchmark.")
    if user.pk not in (item.author_id, item.assignee_id):
        owner = getattr(item.author, "username", None) if item.author_id else None
        if owner:
            return _(
                "Item #%(id)s is not yours (it is %(owner)s's): you can edit items you wrote or that are assigned to you."
            ) % {"id": item.pk, "owner": owner}
        return _("Item #%(id)s is not yours: you can edit items you wrote or that are assigned to you.") % {"id": item.pk}
    if not item.is_work_in_progress:
        return _("Item #%(id)s is '%(status)s': only drafts and items sent back for revision can be edited.") % {
            "id": item.pk,
            "status": item.status_label,
        }
    return None


def item_withdraw_refusal(user, item) -> str | None:
    """Why `user` may not take a submitted item back to draft: only its author, its assignee or a researcher may."""
    if is_researcher(user) or user.pk in (item.author_id, item.assignee_id):
        return None
    return f"Only the author, the assignee or a researcher can take item #{item.pk} back."


def item_review_refusal(user, item, *, editors=()) -> str | None:
    """Why `user` may not review `item`: the reviewer role, membership, and never one's own work
    (its author, its assignee, or `editors`: whoever else edited it, from annotation.selectors.editors_of)."""
    if not may_review(user):
        return "Reviewing needs the reviewer or researcher role."
    if not is_member(user, item.benchmark):
        return "You are not a member of this benchmark."
    return own_work_refusal(user, {item.author_id, item.assignee_id, *editors}, f"Item #{item.pk}", "reviews")


def own_work_refusal(user, writer_ids, what: str, act: str = "approves") -> str | None:
    """Nobody reviews or approves their own work: `writer_ids` are the people whose work `what` is."""
    if user.pk in writer_ids:
        return f"{what} is your own work: someone else {act} it."
    return None


def sees_withheld(user, item, *, edited: bool = False, reviewing: bool = False) -> bool:
    """Whether `user` may read what a frozen release keeps private of `item` (its answer key,
    reference answer or criteria, `item.withheld`): researchers, and the people whose work the
    item is: its author, its assignee, someone who `edited` it, a reviewer assigned to it
    (`reviewing`). Every other member sees the item without them."""
    if is_researcher(user) or not getattr(item, "withheld", None):
        return True
    return user.pk in (item.author_id, item.assignee_id) or edited or reviewing


# ---- what templates ask ---------------------------------------------------------------------------


def context(request) -> dict:
    """Template context processor: the user's role and what it allows, for menus and buttons."""
    user = getattr(request, "user", None)
    role = user_role(user) if user is not None else None
    return {
        "user_role": role,
        "user_role_label": ROLE_LABELS.get(role, role),
        "is_researcher": role == RESEARCHER,
        "is_reviewer": role in (REVIEWER, RESEARCHER),
    }
