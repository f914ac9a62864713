"""Shapes of the rewrite forms; the rules are in rewrite.services."""

from django import forms
from django.utils.translation import gettext_lazy as _

from .models import PromptTemplate, Rewrite, TemplateVersion
from .services.batches import MAX_N


class BatchForm(forms.Form):
    endpoint = forms.ChoiceField(
        label=_("Endpoint"), help_text=_("An endpoint of the models file; GLM (provider zhipuai) is the usual choice.")
    )
    template_version = forms.ModelChoiceField(
        queryset=TemplateVersion.objects.none(),
        label=_("Prompt template"),
        required=False,
        empty_label=_("默认（中文）: the default Chinese template, latest version"),
    )
    n = forms.IntegerField(min_value=1, max_value=MAX_N, initial=5, label=_("Rewrites per seed"))
    include_mcq = forms.BooleanField(required=False, label=_("Also multiple-choice seeds"))
    temperature = forms.FloatField(
        min_value=0, max_value=2, required=False, label=_("Temperature"), help_text=_("Empty: the endpoint's default.")
    )

    def __init__(self, *args, endpoints=(), versions=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["endpoint"].choices = [(name, name) for name in endpoints]
        self.fields["template_version"].queryset = versions if versions is not None else TemplateVersion.objects.none()
        self.fields["template_version"].label_from_instance = lambda v: f"{v.template.name} · v{v.number}"

    def arguments(self) -> dict:
        data = self.cleaned_data
        return {
            "endpoint": data["endpoint"],
            "template_version": data["template_version"],
            "n": data["n"],
            "include_mcq": data["include_mcq"],
            "params": {"temperature": data["temperature"]} if data.get("temperature") is not None else {},
        }


class TemplateForm(forms.Form):
    name = forms.CharField(max_length=100, label=_("Name"))
    language = forms.ChoiceField(choices=PromptTemplate.Language.choices, label=_("Language"))
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 12}), max_length=8000, label=_("Text"))


class VersionForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 14}), max_length=8000, label=_("Text"))
    note = forms.CharField(
        max_length=200, required=False, label=_("Note"), help_text=_("What changed, for whoever reads the versions later.")
    )


class RejectForm(forms.Form):
    reason = forms.ChoiceField(choices=Rewrite.Reason.choices)
    comment = forms.CharField(max_length=2000, required=False)
