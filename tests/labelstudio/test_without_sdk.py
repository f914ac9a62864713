"""Without label-studio-sdk (the optional extra `labelstudio`) the app still runs, and every way
into Label Studio says what to install instead of failing with an ImportError. The SDK's absence
is simulated by blocking its import."""

import html
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from jobs.models import Job
from labelstudio import client as ls_client
from labelstudio import services as lss
from labelstudio.models import LabelStudioLink, LabelStudioTask
from tests.conftest import REPO_ROOT

INSTALL = "pip install 'benchforge[labelstudio]'"


@pytest.fixture
def no_sdk(monkeypatch):
    """`import label_studio_sdk` raises ImportError, as when the extra is not installed."""
    monkeypatch.setitem(sys.modules, "label_studio_sdk", None)
    monkeypatch.setenv("LABEL_STUDIO_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "a" * 40)


def test_the_client_says_what_to_install(no_sdk):
    assert INSTALL in ls_client.sdk_problem()
    with pytest.raises(ls_client.LabelStudioError) as caught:
        ls_client.LabelStudioClient("http://127.0.0.1:9", "a" * 40)
    assert caught.value.code == "labelstudio_sdk_missing" and INSTALL in caught.value.message
    assert "label-studio-sdk" in caught.value.message


def test_with_the_sdk_there_is_no_problem():
    assert ls_client.sdk_problem() is None


@pytest.mark.django_db
def test_the_page_says_what_to_install_and_offers_no_push(no_sdk, client_for, benchmark, researcher):
    response = client_for(researcher).get(f"/b/{benchmark.slug}/labelstudio/")
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert 'id="labelstudio-sdk-missing"' in page and INSTALL in page
    assert '<button type="submit" class="primary" disabled>Push to Label Studio</button>' in page


@pytest.mark.django_db
def test_the_page_has_no_warning_when_the_sdk_is_installed(client_for, benchmark, researcher):
    page = client_for(researcher).get(f"/b/{benchmark.slug}/labelstudio/").content.decode()
    assert "labelstudio-sdk-missing" not in page and "Push to Label Studio" in page


@pytest.mark.django_db
def test_the_command_says_what_to_install(no_sdk, benchmark, researcher, items):
    with pytest.raises(CommandError) as caught:
        call_command("labelstudio", "push", benchmark.slug, "--user", researcher.username, "--title", "No SDK")
    assert INSTALL in str(caught.value)
    assert not LabelStudioLink.objects.exists() and not LabelStudioTask.objects.exists()

    LabelStudioLink.objects.create(benchmark=benchmark, url="http://127.0.0.1:9", project_id=1, title="Earlier")
    with pytest.raises(CommandError) as caught:
        call_command("labelstudio", "pull", benchmark.slug, "--user", researcher.username)
    assert INSTALL in str(caught.value)


@pytest.mark.django_db
def test_a_job_started_anyway_fails_with_what_to_install(no_sdk, benchmark, researcher, items):
    job = lss.push_items_to_labelstudio(benchmark, [items["single"]], project_title="No SDK", user=researcher)
    assert job.status == Job.Status.FAILED and INSTALL in job.message


def test_the_app_loads_and_passes_its_checks_without_the_sdk():
    # A fresh interpreter: here the SDK is already imported. Blocked before Django sets up.
    code = (
        "import sys; sys.modules['label_studio_sdk'] = None\n"
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'benchforge.settings'); django.setup()\n"
        "import labelstudio.services, labelstudio.views, labelstudio.management.commands.labelstudio\n"
        "from django.core.management import call_command; call_command('check')\n"
        "assert 'label_studio_sdk' not in [m.split('.')[0] for m in sys.modules if sys.modules[m] is not None]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
