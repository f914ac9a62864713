from django import forms
from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _

from benchforge.inputs import ModelMultipleChoiceField

from .models import Benchmark, KnownImageSet, Task
from .presets import PRESETS


class BenchmarkCreateForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200)
    slug = forms.SlugField(
        label=_("Slug"), max_length=80, required=False, help_text=_("Short id used in URLs; made from the name if empty.")
    )
    description = forms.CharField(label=_("Description"), widget=forms.Textarea(attrs={"rows": 3}), required=False)
    language = forms.ChoiceField(
        label=_("Language"),
        # left out: the preset's language, English without a preset
        choices=[("", _("the preset's (English without one)"))] + Benchmark._meta.get_field("language").choices,
        required=False,
        help_text=Benchmark._meta.get_field("language").help_text,
    )
    preset = forms.ChoiceField(
        label=_("Preset"),
        choices=[("", _("— empty taxonomy —"))] + [(k, p.name) for k, p in PRESETS.items()],
        required=False,
        help_text=_("Start from the taxonomy of a published benchmark."),
    )


class PresetForm(forms.Form):
    preset = forms.ChoiceField(label=_("Preset"), choices=[(k, p.name) for k, p in PRESETS.items()])


class KeywordsField(forms.CharField):
    """Comma-separated keywords <-> a list."""

    def prepare_value(self, value):
        return ", ".join(value) if isinstance(value, list) else value

    def to_python(self, value):
        value = super().to_python(value)
        return [k.strip() for k in value.split(",") if k.strip()]


class TaskForm(forms.ModelForm):
    # Full width: keyword lists run to dozens of terms, names to a long phrase.
    collection_keywords = KeywordsField(
        label=_("Collection keywords"),
        required=False,
        help_text=_("Comma-separated search terms for collecting images."),
        widget=forms.TextInput(attrs={"class": "wide"}),
    )

    class Meta:
        model = Task
        fields = [
            *("name", "name_en", "description", "description_en", "collection_keywords"),
            *("guideline", "guideline_en", "judge_rules", "judge_rules_en", "quota"),
        ]
        labels = {
            "name": _("Name"),
            "name_en": _("English name"),
            "description": _("Description"),
            "description_en": _("Description in English"),
            "guideline": _("Guideline"),
            "guideline_en": _("Guideline in English"),
            "judge_rules": _("Judge rules"),
            "judge_rules_en": _("Judge rules in English"),
            "quota": _("Quota"),
        }
        widgets = {
            "name": forms.TextInput(attrs={"class": "wide"}),
            "name_en": forms.TextInput(attrs={"class": "wide"}),
            "description": forms.Textarea(attrs={"rows": 2}),
            "description_en": forms.Textarea(attrs={"rows": 2}),
            "guideline": forms.Textarea(attrs={"rows": 5}),
            "guideline_en": forms.Textarea(attrs={"rows": 5}),
            "judge_rules": forms.Textarea(attrs={"rows": 3}),
            "judge_rules_en": forms.Textarea(attrs={"rows": 3}),
        }


class BenchmarkSettingsForm(forms.ModelForm):
    members = ModelMultipleChoiceField(
        label=_("Members"),
        queryset=get_user_model().objects.order_by("username"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )

    class Meta:
        model = Benchmark
        fields = ["name", "description", "language", "near_dup_threshold", "min_short_edge", "members"]
        labels = {
            "name": _("Name"),
            "description": _("Description"),
            "language": _("Language"),
            "near_dup_threshold": _("Near-duplicate threshold"),
            "min_short_edge": _("Minimum short edge"),
        }


class ImportForm(forms.Form):
    kind = forms.ChoiceField(
        label=_("Kind"), choices=[("zip", _("Zip archive of images")), ("url_list", _("URL list (CSV or TXT)"))]
    )
    file = forms.FileField(
        label=_("File"),
        help_text=_(
            "A zip (sub-folders named after a task slug tag their images), or a URL list: one URL per line, "
            "or a CSV with a <code>url</code> column and optional <code>task</code>, <code>source</code> and "
            "<code>license</code> columns."
        ),
    )
    tasks = ModelMultipleChoiceField(
        label=_("Tasks"),
        queryset=Task.objects.none(),
        required=False,
        help_text=_("Tag every imported image with these tasks."),
    )
    source = forms.CharField(label=_("Source"), required=False, max_length=1000)
    license = forms.CharField(label=_("License"), required=False, max_length=200)

    def __init__(self, *args, benchmark=None, **kwargs):
        super().__init__(*args, **kwargs)
        if benchmark is not None:
            self.fields["tasks"].queryset = benchmark.tasks.select_related("category__parent")
            self.fields["tasks"].label_from_instance = lambda task: task.label


class KnownSetForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200)
    kind = forms.ChoiceField(label=_("Kind"), choices=KnownImageSet.Kind.choices)
    description = forms.CharField(label=_("Description"), required=False, widget=forms.Textarea(attrs={"rows": 2}))
    file = forms.FileField(
        label=_("File"),
        help_text=_(
            "CSV with an <code>md5</code> and/or <code>phash</code> column (16 hex digits, as imagehash prints it) "
            "and optional <code>label</code>, or JSONL with the same keys. For a folder of images use "
            "<code>manage.py import_known_set NAME FOLDER</code>."
        ),
    )
