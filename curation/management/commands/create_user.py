import os

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from benchforge.auth import create_token_for
from benchforge.roles import ROLES
from benchforge.services import create_or_update_user
from curation.models import Benchmark


class Command(BaseCommand):
    help = "Create a user with a role (or change an existing user's role) and optionally add them to benchmarks."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=ROLES)
        parser.add_argument("--password-env", default="", help="name of an environment variable holding the password")
        parser.add_argument("--email", default="")
        parser.add_argument("--benchmark", action="append", default=[], help="benchmark slug to join (repeatable)")
        parser.add_argument(
            "--token",
            action="store_true",
            help="create an API token and print it (shown once: only its hash is stored; it expires)",
        )

    def handle(self, username, role, password_env, email, benchmark, token, **options):
        password = None
        if password_env:
            password = os.environ.get(password_env)
            if not password:
                raise CommandError(f"environment variable {password_env} is empty or not set")
        benchmarks = []
        for slug in benchmark:
            try:
                benchmarks.append(Benchmark.objects.get(slug=slug))
            except Benchmark.DoesNotExist:
                raise CommandError(f"no benchmark with slug '{slug}'") from None
        try:
            user, created = create_or_update_user(username, role, password=password, email=email, benchmarks=benchmarks)
        except ValidationError as exc:
            raise CommandError("password refused: " + " ".join(exc.messages)) from None
        self.stdout.write(self.style.SUCCESS(f"{'created' if created else 'updated'} {username} as {role}"))
        if created and not password:
            self.stdout.write("no password set: pass --password-env, or use `manage.py changepassword`")
        if token:
            self.stdout.write(f"API token (shown once): {create_token_for(user)}")
