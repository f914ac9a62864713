from django import forms
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from annotation.workflow import STATUS_CHOICES
from curation.selectors import task_choices

from .models import DEFAULT_TOKEN_ENV, URL_ENV, LabelStudioLink, token_env_validator
from .services import ALL, APPLY_CHOICES, LATEST, SEVERAL_CHOICES


class ConnectionForm(forms.Form):
    url = forms.URLField(
        required=False,
        label=_("Label Studio URL"),
        assume_scheme="http",
        help_text=format_lazy(_("Empty: the <code>{}</code> environment variable of the benchmark server."), URL_ENV),
    )
    token_env = forms.CharField(
        validators=[token_env_validator],
        initial=DEFAULT_TOKEN_ENV,
        label=_("Token variable"),
        help_text=_(
            "Name of the environment variable holding the access token (it must start with <code>LABEL_STUDIO_</code>). "
            "The token itself is never stored here."
        ),
    )


class PushForm(forms.Form):
    title = forms.CharField(
        max_length=200,
        label=_("Project title"),
        help_text=_("A new project is created for a new title; an existing one only receives items it does not have yet."),
    )
    task = forms.ChoiceField(label=_("Task"), required=False)
    status = forms.ChoiceField(label=_("Status"), required=False, choices=[("", _("any status"))] + STATUS_CHOICES)

    def __init__(self, *args, benchmark, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["task"].choices = [("", _("every task"))] + task_choices(benchmark)


class PullForm(forms.Form):
    apply = forms.ChoiceField(
        choices=list(APPLY_CHOICES.items()), required=False, label=pgettext_lazy("pull annotations", "Apply")
    )
    several = forms.ChoiceField(choices=list(SEVERAL_CHOICES.items()), required=False, label=_("When annotators disagree"))

    def clean(self):
        data = super().clean()
        # Not given (an older page, a script): every annotation, the latest wins.
        return {"apply": data.get("apply") or ALL, "several": data.get("several") or LATEST}


class ReviewedForm(forms.Form):
    reviewed = forms.ChoiceField(choices=LabelStudioLink.Reviewed.choices, label=_("Changes to reviewed items"))
