from django import forms
from django.utils.translation import gettext_lazy as _

from exports.models import Release

from .models import Window


class WindowForm(forms.Form):
    release = forms.ModelChoiceField(queryset=Release.objects.none(), label=_("Frozen release"))
    title = forms.CharField(max_length=120, label=_("Title"))
    split = forms.ChoiceField(choices=Window.Split.choices, label=_("Split"))
    method = forms.ChoiceField(choices=(), label=_("Scoring method"))
    judge = forms.CharField(max_length=100, required=False, label=_("Judge endpoint"))
    anchor = forms.IntegerField(required=False, min_value=1, max_value=2**31 - 1, label=_("Anchor score (pairwise)"))
    opens_at = forms.DateTimeField(label=_("Opens at (UTC)"))
    closes_at = forms.DateTimeField(label=_("Closes at (UTC)"))
    daily_limit = forms.IntegerField(min_value=1, max_value=1000, initial=3, label=_("Submissions per team per day"))
    total_limit = forms.IntegerField(min_value=1, max_value=100000, initial=30, label=_("Submissions per team in total"))
    cost_cap_submission = forms.DecimalField(
        required=False, min_value=0, max_digits=12, decimal_places=4, label=_("Cost cap per submission")
    )
    cost_cap_team = forms.DecimalField(required=False, min_value=0, max_digits=12, decimal_places=4, label=_("Cost cap per team"))
    hidden_fraction = forms.FloatField(min_value=0, max_value=0.9, initial=0.5, label=_("Hidden share of the split"))
    split_seed = forms.IntegerField(initial=0, min_value=-(2**31), max_value=2**31 - 1, label=_("Seed of the shown/hidden split"))
    registration = forms.ChoiceField(choices=Window.Registration.choices, label=_("Registration"))
    feeds_analysis = forms.BooleanField(
        required=False,
        label=_("Teams' scores also join the internal leaderboard and item analysis"),
        help_text=_("Off: outside teams' models are not yours; their scores stay on this window and its public board."),
    )

    def __init__(self, *args, releases, methods, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["release"].queryset = releases
        self.fields["method"].choices = [(m, m) for m in methods]


class SubmitForm(forms.Form):
    predictions = forms.FileField(label=_("Predictions file (JSON Lines)"))
    model = forms.CharField(max_length=100, required=False, label=_("Model name"))


class SignUpForm(forms.Form):
    username = forms.CharField(max_length=150, required=False, label=_("Username"))
    password = forms.CharField(widget=forms.PasswordInput, required=False, label=_("Password"))
    team_name = forms.CharField(max_length=80, required=False, label=_("New team's name"))
    join_code = forms.CharField(max_length=64, required=False, label=_("Or your team's join code"))
    invite = forms.CharField(max_length=64, required=False, widget=forms.HiddenInput)


class PublishForm(forms.Form):
    published = forms.BooleanField(required=False)
    link = forms.CharField(max_length=500, required=False, label=_("Paper or code link"))


class HideForm(forms.Form):
    reason = forms.CharField(max_length=500, required=False, label=_("Reason"))


class BaselineForm(forms.Form):
    score = forms.IntegerField(min_value=1, max_value=2**31 - 1, label=_("Score"))
    model = forms.CharField(max_length=100, required=False, label=_("Shown as"))
    link = forms.CharField(max_length=500, required=False, label=_("Paper or code link"))
