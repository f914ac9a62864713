"""Form parsing for the item editor and the researchers' assignment and import pages.
Shapes and types only: the rules themselves live in annotation.services."""

from django import forms
from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _

from benchforge.errors import DomainError
from benchforge.inputs import BadInput, ModelMultipleChoiceField, parse_ids
from curation.selectors import task_choices

from .contract import ROLES_IN_TURN
from .models import Item
from .selectors import benchmark_people


def _text(value: str) -> str:
    # Browsers send textarea line breaks as CRLF; store plain newlines.
    return value.replace("\r\n", "\n").replace("\r", "\n")


def _ids(values, what: str) -> list[int]:
    return parse_ids(values, what)


def editor_changes(data, item: Item) -> dict:
    """The editor's POST -> `changes` for services.update_item. Sections of the other kinds are
    cleared (their inputs stay on the page, so switching back and saving restores them)."""
    kind = data.get("kind", item.kind)
    changes = {
        "task": data.get("task") or item.task.slug,
        "kind": kind,
        "question_type": data.get("question_type", item.question_type),
        "question": _text(data.get("question", "")),
        "description": _text(data.get("description", "")),
        "history": [],
        "incoherent": False,
        "choices": [],
        "answer": "",
        "hint": "",
    }
    if kind == Item.Kind.MULTI_TURN:
        # Roles come from the position: the editor adds and moves whole user/assistant exchanges.
        changes["history"] = [{"role": ROLES_IN_TURN[n % 2], "content": _text(t)} for n, t in enumerate(data.getlist("turn"))]
        changes["incoherent"] = data.get("incoherent") in ("on", "true", "1")
    elif kind == Item.Kind.MCQ:
        changes["choices"] = [_text(c).strip() for c in data.getlist("choice")]
        changes["answer"] = data.get("answer", "")
        changes["hint"] = _text(data.get("hint", ""))
    if item.seed_id is None:
        changes["reference_answer"] = _text(data.get("reference_answer", ""))
        kinds, texts = data.getlist("criterion_kind"), data.getlist("criterion_text")
        if len(kinds) != len(texts):
            raise DomainError(_("Every criterion needs a kind and a text; reload the page."))
        changes["criteria"] = [{"kind": k, "text": _text(t)} for k, t in zip(kinds, texts)]
        changes["images"] = _ids(data.getlist("image"), str(_("Images")))
    return changes


class NewItemForm(forms.Form):
    task = forms.ChoiceField(label=_("Task"))
    kind = forms.ChoiceField(label=_("Kind"), choices=Item.Kind.choices, initial=Item.Kind.SINGLE_TURN)
    images = forms.CharField(
        label=_("Images"), required=False, help_text=_("Accepted image ids, in order, separated by commas or spaces.")
    )

    def __init__(self, *args, benchmark, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["task"].choices = task_choices(benchmark)

    def clean_images(self):
        return _ids(self.cleaned_data["images"].replace(",", " ").split(), str(_("Images")))


class IdsField(forms.Field):
    """Repeated numeric ids (checkboxes sharing one name)."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value):
        try:
            return parse_ids(value or [])
        except BadInput as exc:
            raise forms.ValidationError(exc.message) from None


def _people_field(benchmark, **kwargs):
    return forms.ModelChoiceField(queryset=benchmark_people(benchmark), to_field_name="username", **kwargs)


class AssignImagesForm(forms.Form):
    task = forms.SlugField()
    images = IdsField(error_messages={"required": _("Select at least one image.")})
    assignee = forms.ModelChoiceField(queryset=get_user_model().objects.none())

    def __init__(self, *args, benchmark, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["assignee"] = _people_field(benchmark, error_messages={"required": _("Choose the annotator.")})


class AssignItemsForm(forms.Form):
    items = IdsField(error_messages={"required": _("Select at least one item.")})
    assignee = forms.ModelChoiceField(queryset=get_user_model().objects.none())

    def __init__(self, *args, benchmark, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["assignee"] = _people_field(benchmark, error_messages={"required": _("Choose the annotator.")})


class AssignEvenlyForm(forms.Form):
    tasks = forms.MultipleChoiceField(required=False, help_text=_("None selected: every task."))
    assignees = ModelMultipleChoiceField(queryset=get_user_model().objects.none())

    def __init__(self, *args, benchmark, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["tasks"].choices = task_choices(benchmark)
        self.fields["assignees"] = ModelMultipleChoiceField(
            queryset=benchmark_people(benchmark),
            to_field_name="username",
            error_messages={"required": _("Choose at least one annotator.")},
        )


class OpenAssignmentsForm(forms.Form):
    action = forms.ChoiceField(choices=[("reassign", _("Reassign")), ("cancel", _("Cancel"))])
    assignments = IdsField(error_messages={"required": _("Select at least one assignment.")})
    assignee = forms.ModelChoiceField(queryset=get_user_model().objects.none(), required=False)

    def __init__(self, *args, benchmark, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["assignee"] = _people_field(benchmark, required=False)

    def clean(self):
        data = super().clean()
        if data.get("action") == "reassign" and not data.get("assignee"):
            raise forms.ValidationError(_("Choose who gets the selected assignments."))
        return data


class AlignMMBenchImportForm(forms.Form):
    file = forms.FileField(label=_("File"), help_text=_("<code>metadata.jsonl</code> (one JSON object per line)."))

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if not upload.name.lower().endswith((".jsonl", ".json", ".ndjson")):
            raise forms.ValidationError(_("Upload the metadata.jsonl file (JSON lines)."))
        return upload
