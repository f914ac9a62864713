"""Roles and the checks every view and API endpoint uses.

A user has one role, stored as a Django group. Roles are nested: a reviewer can do what an
annotator can, and a researcher (the benchmark owner) can do everything; superusers count
as researchers.
"""

from functools import wraps

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db.models import Case, IntegerField, OuterRef, Subquery, Value, When
from rest_framework.permissions import BasePermission

ANNOTATOR = "annotator"
REVIEWER = "reviewer"
RESEARCHER = "researcher"
ROLES = (ANNOTATOR, REVIEWER, RESEARCHER)
_RANK = {ANNOTATOR: 1, REVIEWER: 2, RESEARCHER: 3}


def user_role(user) -> str | None:
    """The user's role name, or None for an authenticated user without a role."""
    if not getattr(user, "is_authenticated", False):
        return None
    if user.is_superuser:
        return RESEARCHER
    cached = getattr(user, "_benchforge_role", False)
    if cached is not False:
        return cached
    names = set(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
    role = max(names, key=_RANK.__getitem__) if names else None
    user._benchforge_role = role
    return role


class RoleModelBackend(ModelBackend):
    """ModelBackend that loads the user's role with the user, in one query instead of two:
    every page checks the role, and the user is loaded again on every request."""

    def get_user(self, user_id):
        rank = Case(*(When(name=name, then=Value(n)) for name, n in _RANK.items()), output_field=IntegerField())
        top_role = Group.objects.filter(user=OuterRef("pk"), name__in=ROLES).annotate(rank=rank).order_by("-rank").values("name")[:1]
        user = get_user_model()._default_manager.filter(pk=user_id).annotate(role_name=Subquery(top_role)).first()
        if user is None or not self.user_can_authenticate(user):
            return None
        user._benchforge_role = user.role_name
        return user


def has_role(user, *roles: str) -> bool:
    """True when the user's role is at least the lowest of `roles`."""
    role = user_role(user)
    if role is None:
        return False
    return _RANK[role] >= min(_RANK[r] for r in roles)


def set_role(user, role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
    user.groups.remove(*Group.objects.filter(name__in=ROLES))
    group, _ = Group.objects.get_or_create(name=role)
    user.groups.add(group)
    user._benchforge_role = role


def role_required(*roles: str):
    """View decorator: login is enforced by middleware; the role check answers 403."""

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not has_role(request.user, *roles):
                raise PermissionDenied(f"This page needs the {' or '.join(roles)} role.")
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


class RoleRequiredMixin:
    allowed_roles: tuple[str, ...] = (ANNOTATOR,)

    def dispatch(self, request, *args, **kwargs):
        if not has_role(request.user, *self.allowed_roles):
            raise PermissionDenied(f"This page needs the {' or '.join(self.allowed_roles)} role.")
        return super().dispatch(request, *args, **kwargs)


def role_permission(*roles: str) -> type[BasePermission]:
    """DRF permission class requiring at least one of `roles`."""

    class HasRole(BasePermission):
        message = f"This endpoint needs the {' or '.join(roles)} role."

        def has_permission(self, request, view):
            return has_role(request.user, *roles)

    HasRole.__name__ = f"HasRole_{'_'.join(roles)}"
    return HasRole


def role_context(request):
    user = getattr(request, "user", None)
    role = user_role(user) if user is not None else None
    return {
        "user_role": role,
        "is_researcher": role == RESEARCHER,
        "is_reviewer": role in (REVIEWER, RESEARCHER),
    }
