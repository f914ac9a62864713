from django import forms

from annotation.workflow import STATUS_CHOICES
from curation.selectors import task_choices

from .models import DEFAULT_TOKEN_ENV, URL_ENV, token_env_validator
from .services import ALL, APPLY_CHOICES, LATEST, SEVERAL_CHOICES


class ConnectionForm(forms.Form):
    url = forms.URLField(
        required=False,
        label="Label Studio URL",
        assume_scheme="http",
        help_text=f"Empty: the {URL_ENV} environment variable of the benchmark server.",
    )
    token_env = forms.CharField(
        validators=[token_env_validator],
        initial=DEFAULT_TOKEN_ENV,
        label="Token variable",
        help_text="Name of the environment variable holding the access token (it must start with LABEL_STUDIO_). "
        "The token itself is never stored here.",
    )


class PushForm(forms.Form):
    title = forms.CharField(
        max_length=200,
        label="Project title",
        help_text="A new project is created for a new title; an existing one only receives items it does not have yet.",
    )
    task = forms.ChoiceField(required=False)
    status = forms.ChoiceField(required=False, choices=[("", "any status")] + STATUS_CHOICES)

    def __init__(self, *args, benchmark, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["task"].choices = [("", "every task")] + task_choices(benchmark)


class PullForm(forms.Form):
    apply = forms.ChoiceField(choices=list(APPLY_CHOICES.items()), required=False, label="Apply")
    several = forms.ChoiceField(choices=list(SEVERAL_CHOICES.items()), required=False, label="When annotators disagree")

    def clean(self):
        data = super().clean()
        # Not given (an older page, a script): every annotation, the latest wins.
        return {"apply": data.get("apply") or ALL, "several": data.get("several") or LATEST}
