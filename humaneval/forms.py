from django import forms
from django.contrib.auth import get_user_model
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from benchforge.inputs import ModelMultipleChoiceField
from exports.models import Release, Score
from exports.selectors import owners_scores_in

from .models import Study
from .selectors import SCORE_METHODS


class PlanForm(forms.Form):
    title = forms.CharField(max_length=200, label=_("Title"), help_text=_("raters see it: do not name a model"))
    release = forms.ModelChoiceField(
        queryset=Release.objects.none(), to_field_name="version", label=_("Release"), help_text=_("a frozen release")
    )
    mode = forms.ChoiceField(choices=Study.Mode.choices, label=_("Mode"))
    scores = ModelMultipleChoiceField(
        queryset=Score.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        label=_("Scores"),
        help_text=_("the models whose answers people rate"),
    )
    raters = ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(),
        widget=forms.CheckboxSelectMultiple,
        label=_("Raters"),
        help_text=_("members who rate"),
    )
    per_task = forms.IntegerField(min_value=1, max_value=1000, initial=2, label=_("Items per task"))
    ratings_per_item = forms.IntegerField(min_value=2, max_value=20, initial=2, label=_("Ratings per answer"))
    seed = forms.IntegerField(
        min_value=0, max_value=2**31 - 1, initial=0, label=_("Seed"), help_text=_("the same seed: the same sample and orders")
    )
    minutes_per_rating = forms.FloatField(
        min_value=0.1, max_value=120, initial=1.5, label=_("Minutes per rating"), help_text=_("for the rater-hours estimate")
    )

    def __init__(self, *args, benchmark, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["release"].queryset = Release.objects.filter(benchmark=benchmark, status=Release.Status.FROZEN)
        self.fields["release"].label_from_instance = lambda r: r.version
        frozen = list(self.fields["release"].queryset.order_by("-frozen_at")[:2])
        if len(frozen) == 1:  # the only choice: chosen, with no empty "---------" left to pick
            self.fields["release"].initial = frozen[0].version
            self.fields["release"].empty_label = None
        self.fields["scores"].queryset = (
            owners_scores_in(benchmark)
            .filter(status=Score.Status.DONE, method__in=SCORE_METHODS.values())
            .select_related("release")
        )
        self.fields["scores"].label_from_instance = lambda s: (
            gettext("%(label)s (%(method)s, release %(version)s)")
            % {
                "label": s.label,
                "method": s.get_method_display(),
                "version": s.release.version,
            }
        )
        members = benchmark.members.all() | get_user_model().objects.filter(groups__name="researcher")
        self.fields["raters"].queryset = members.distinct().order_by("username")
        self.fields["raters"].label_from_instance = lambda u: u.username


class ImportForm(forms.Form):
    ratings = forms.FileField(label=_("Ratings"), help_text=_("JSON Lines in the export's format"))
