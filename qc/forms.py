"""Shapes of the QC forms; the rules are in qc.services."""

from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from benchforge.inputs import BadInput, ModelMultipleChoiceField, parse_ids
from curation.models import Benchmark, Task
from curation.selectors import tasks_of

from .models import QCItem, QCRun
from .services.imports import FORMATS
from .services.runs import MAX_PARTS


class RunForm(forms.Form):
    filter = forms.ChoiceField(choices=QCRun.Filter.choices, initial=QCRun.Filter.TEXT_ONLY, label=_("Filter"))
    models = forms.MultipleChoiceField(
        choices=[],
        label=_("Models"),
        help_text=_("Asked in this order; a later model is skipped once an item's verdict is settled."),
    )
    extractor = forms.ChoiceField(
        choices=[],
        required=False,
        label=_("Extractor"),
        help_text=_("Reads the chosen letter when the rules cannot (optional)."),
    )
    judge = forms.ChoiceField(
        choices=[], required=False, label=_("Judge"), help_text=_("Grades open answers 1-10 (judged filter only).")
    )
    tasks = ModelMultipleChoiceField(
        queryset=Task.objects.none(), required=False, label=_("Tasks"), help_text=_("None: every task.")
    )
    items = forms.CharField(
        required=False,
        label=_("Item ids"),
        help_text=_("Only these items (ids separated by spaces or commas); empty: all."),
    )
    threshold = forms.FloatField(
        required=False,
        min_value=0,
        max_value=0.99,
        label=_("Threshold"),
        help_text=_(
            "Share of the models. Text-only and judged flag above it (default 0.5: more than half); "
            "all-fail flags at or below it (default 0: none solves it)."
        ),
    )
    min_score = forms.IntegerField(
        min_value=1,
        max_value=10,
        initial=7,
        label=_("Minimum score"),
        help_text=_("Judged filter: the grade that counts as solved."),
    )
    early_stop = forms.BooleanField(
        initial=True, required=False, label=_("Stop early"), help_text=_("Skip calls that cannot change a verdict.")
    )
    parts = forms.IntegerField(
        min_value=1,
        max_value=MAX_PARTS,
        initial=1,
        label=_("Parts"),
        help_text=_("Jobs sharing the items, for several workers."),
    )

    def __init__(self, *args, benchmark, endpoints, **kwargs):
        super().__init__(*args, **kwargs)
        vision = gettext("vision")
        names = [(name, f"{name} ({e.model}{', ' + vision if e.vision else ''})") for name, e in sorted(endpoints.items())]
        self.fields["models"].choices = names
        self.fields["extractor"].choices = [("", gettext("none: rules only"))] + names
        self.fields["judge"].choices = [("", gettext("none"))] + names
        self.fields["tasks"].queryset = tasks_of(benchmark)
        self.fields["tasks"].label_from_instance = lambda task: task.label

    def clean_items(self):
        text = self.cleaned_data["items"].replace(",", " ").split()
        if not text:
            return None
        try:
            return sorted(set(parse_ids(text, "Each item id")))
        except BadInput as exc:
            raise forms.ValidationError(exc.message) from None


class DecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=QCItem.Decision.choices, label=_("Decision"))
    note = forms.CharField(required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 2}), label=_("Note"))


class ImportForm(forms.Form):
    format = forms.ChoiceField(choices=list(FORMATS.items()), label=_("Format"))
    file = forms.FileField(label=_("File"))
    name = forms.CharField(
        required=False, max_length=200, label=_("Name"), help_text=_("A new external benchmark with this name.")
    )
    benchmark = forms.ModelChoiceField(
        queryset=Benchmark.objects.none(),
        required=False,
        to_field_name="slug",
        label=_("Benchmark"),
        help_text=_("Or add to this benchmark."),
    )

    def __init__(self, *args, benchmarks, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["benchmark"].queryset = benchmarks

    def clean(self):
        data = super().clean()
        if not data.get("name", "").strip() and not data.get("benchmark"):
            raise forms.ValidationError(_("Name a new benchmark, or choose one to add the items to."))
        return data
