"""User management (the project package owns roles)."""

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.db import transaction

from .roles import ROLES, set_role


@transaction.atomic
def create_or_update_user(username: str, role: str, *, password: str | None = None, email: str = "", benchmarks=()):
    """Create the user (or update an existing one's role); add them to `benchmarks`.
    A password is only set when given, so re-running never resets someone's password; it must
    pass the password validators (ValidationError says why not)."""
    if role not in ROLES:
        raise ValueError(f"unknown role '{role}'; choose one of: {', '.join(ROLES)}")
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username, defaults={"email": email})
    if password:
        validate_password(password, user)
        user.set_password(password)
        user.save()
    elif created:
        user.set_unusable_password()
        user.save()
    set_role(user, role)
    for benchmark in benchmarks:
        benchmark.members.add(user)
    return user, created
