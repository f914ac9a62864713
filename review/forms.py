"""Shapes of the review forms; the rules are in review.services."""

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from benchforge.inputs import ModelMultipleChoiceField
from benchforge.roles import RESEARCHER, REVIEWER
from curation.models import Task
from curation.selectors import tasks_of

from .models import REASON_LABELS, Review, ReviewRound
from .services import MAX_REVIEWERS_PER_ITEM


class OpenRoundForm(forms.Form):
    kind = forms.ChoiceField(label=_("Kind"), choices=ReviewRound.Kind.choices, initial=ReviewRound.Kind.CROSS)
    rule = forms.ChoiceField(
        choices=ReviewRound.Rule.choices,
        initial=ReviewRound.Rule.MAJORITY,
        label=_("Rule"),
        help_text=_("How the verdicts of an item's reviewers combine."),
    )
    per_item = forms.IntegerField(
        min_value=1,
        max_value=MAX_REVIEWERS_PER_ITEM,
        initial=1,
        label=_("Reviewers per item"),
        help_text=_("More than one gives overlapping reviews, and agreement numbers."),
    )
    tasks = ModelMultipleChoiceField(
        queryset=Task.objects.none(), required=False, label=_("Tasks"), help_text=_("None: every task.")
    )
    authors = ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        to_field_name="username",
        label=_("Authors"),
        help_text=_("None: every author."),
    )
    reviewers = ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        to_field_name="username",
        label=_("Reviewers"),
        help_text=_("None: every member with the reviewer role (cross-review) or the researchers (expert verification)."),
    )
    sample_per_task = forms.IntegerField(
        min_value=1,
        required=False,
        label=_("Sample per task"),
        help_text=_("Expert verification only: review this many accepted items per task, drawn at random; empty: all of them."),
    )
    seed = forms.IntegerField(initial=0, required=False, label=_("Seed"), help_text=_("Makes the random sample reproducible."))
    reveal_reviewers = forms.BooleanField(
        initial=True,
        required=False,
        label=_("Reveal reviewers"),
        help_text=_("Authors see who reviewed them once the round closes."),
    )

    def __init__(self, *args, benchmark, **kwargs):
        super().__init__(*args, **kwargs)
        people = benchmark.members.order_by("username")
        self.fields["tasks"].queryset = tasks_of(benchmark)
        self.fields["tasks"].label_from_instance = lambda task: task.label
        self.fields["authors"].queryset = people
        # Each person once: members who may review, and every researcher (members or not). Both
        # sides as id subqueries, so no join can repeat a person who is both.
        users = get_user_model().objects
        may_review = benchmark.members.filter(groups__name__in=(REVIEWER, RESEARCHER)).values("pk")
        researchers = users.filter(groups__name=RESEARCHER).values("pk")
        self.fields["reviewers"].queryset = users.filter(Q(pk__in=may_review) | Q(pk__in=researchers)).order_by("username")


class ReviewForm(forms.Form):
    verdict = forms.ChoiceField(choices=Review.Verdict.choices)
    reasons = forms.MultipleChoiceField(choices=list(REASON_LABELS.items()), required=False)
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), max_length=5000)
    version = forms.IntegerField(min_value=1)
