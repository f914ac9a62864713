"""Prompt templates: a benchmark starts with the default Chinese and English ones; researchers edit
them, and every edit is a new numbered version (batches keep the version they sent)."""

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils.translation import gettext as _

from benchforge import permissions
from benchforge.concurrency import lock
from benchforge.errors import Conflict, DomainError

from .. import prompts
from ..models import PromptTemplate, TemplateVersion

DEFAULT_NAMES = {"zh": "默认（中文）", "en": "Default (English)"}


def ensure_default_templates(benchmark, *, user=None) -> list[PromptTemplate]:
    """The benchmark's default templates, created on first use (idempotent)."""
    found = []
    for language, name in DEFAULT_NAMES.items():
        template, created = PromptTemplate.objects.get_or_create(
            benchmark=benchmark, name=name, defaults={"language": language, "created_by": user}
        )
        if created or not template.versions.exists():
            TemplateVersion.objects.get_or_create(
                template=template,
                number=1,
                defaults={"text": prompts.DEFAULT_TEMPLATES[language], "note": "default text", "created_by": user},
            )
        found.append(template)
    return found


def _check_text(text: str) -> str:
    text = (text or "").replace("\r\n", "\n").strip()
    problems = prompts.template_problems(text)
    if problems:
        raise DomainError(" ".join(problems))
    return text


def create_template(benchmark, *, user, name: str, language: str, text: str) -> PromptTemplate:
    permissions.require_researcher(user, "Writing rewrite prompt templates")
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise DomainError(_("Give the template a name of at most 100 characters."))
    if language not in PromptTemplate.Language.values:
        raise DomainError(_("Language must be one of %(codes)s.") % {"codes": ", ".join(PromptTemplate.Language.values)})
    text = _check_text(text)
    try:
        with transaction.atomic():
            template = PromptTemplate.objects.create(benchmark=benchmark, name=name, language=language, created_by=user)
            TemplateVersion.objects.create(template=template, number=1, text=text, created_by=user)
    except IntegrityError:
        raise Conflict(_("This benchmark already has a template named '%(name)s'.") % {"name": name}, code="duplicate") from None
    return template


def add_version(template: PromptTemplate, *, user, text: str, note: str = "") -> TemplateVersion:
    """Edit a template: its text becomes a new version (the same text as the latest changes nothing)."""
    permissions.require_researcher(user, "Editing rewrite prompt templates")
    text = _check_text(text)
    with transaction.atomic():
        lock(PromptTemplate, template.pk)
        latest = template.versions.order_by("-number").first()
        if latest is not None and latest.text == text:
            return latest
        number = (template.versions.aggregate(n=Max("number"))["n"] or 0) + 1
        return TemplateVersion.objects.create(template=template, number=number, text=text, note=note[:200], created_by=user)
