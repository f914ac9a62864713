from django import forms
from django.contrib.auth import get_user_model

from .models import Benchmark, Task
from .presets import PRESETS


class BenchmarkCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    slug = forms.SlugField(max_length=80, required=False, help_text="Short id used in URLs; made from the name if empty.")
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    preset = forms.ChoiceField(
        choices=[("", "— empty taxonomy —")] + [(k, p.name) for k, p in PRESETS.items()], required=False,
        help_text="Start from the taxonomy of a published benchmark.",
    )


class PresetForm(forms.Form):
    preset = forms.ChoiceField(choices=[(k, p.name) for k, p in PRESETS.items()])


class KeywordsField(forms.CharField):
    """Comma-separated keywords <-> a list."""

    def prepare_value(self, value):
        return ", ".join(value) if isinstance(value, list) else value

    def to_python(self, value):
        value = super().to_python(value)
        return [k.strip() for k in value.split(",") if k.strip()]


class TaskForm(forms.ModelForm):
    collection_keywords = KeywordsField(required=False, help_text="Comma-separated search terms for collecting images.")

    class Meta:
        model = Task
        fields = ["name", "description", "collection_keywords", "guideline", "judge_rules", "quota"]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "guideline": forms.Textarea(attrs={"rows": 5}),
            "judge_rules": forms.Textarea(attrs={"rows": 3}),
        }


class BenchmarkSettingsForm(forms.ModelForm):
    members = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.order_by("username"), required=False,
        widget=forms.CheckboxSelectMultiple,
    )

    class Meta:
        model = Benchmark
        fields = ["name", "description", "near_dup_threshold", "min_short_edge", "members"]
