"""Every kind of item opens in Label Studio's own editor: pushed by benchforge to the real server,
opened in headless Chromium as an annotator would, and checked for a finished editor (the
controls are there, every image loaded) with no error in the page."""

import json
from urllib.parse import urlsplit

import pytest

from annotation.services import create_item
from jobs.models import Job
from labelstudio import services as lss
from labelstudio.models import LabelStudioLink
from tests.conftest import wait_until

from .server import PASSWORD, USERNAME

pytestmark = [pytest.mark.labelstudio, pytest.mark.browser, pytest.mark.django_db]

# Generous: the machine is shared; an editor still spinning after this never finishes.
EDITOR_TIMEOUT_S = 90


@pytest.fixture
def every_kind(items, benchmark, researcher):
    chart = items["single"].task

    def bare(**fields):
        return create_item(benchmark, task=chart, user=researcher, images=[], **fields)

    return {  # no image first: the kind the editor could not open
        "no_image": bare(question="What is 17 + 25?", reference_answer="42", criteria=[{"kind": "exact", "text": "42"}]),
        "mcq_no_image": bare(
            kind="mcq",
            question_type="closed",
            question="Which colour is the sky on a clear day?",
            choices=["Red", "Blue", "Green"],
            answer="B",
            reference_answer="B. Blue",
            criteria=[{"kind": "exact", "text": "B"}],
        ),
        "multi_turn_no_image": bare(
            kind="multi_turn",
            question="And doubled?",
            history=[{"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "4."}],
            reference_answer="8.",
            criteria=[{"kind": "exact", "text": "8"}],
        ),
        **items,
    }


def _failed(response) -> bool:
    return response.status >= 400


def test_every_kind_of_item_opens_in_the_label_studio_editor(ls_env, browser, benchmark, researcher, every_kind):
    job = lss.push_items_to_labelstudio(benchmark, every_kind.values(), project_title="Every kind", user=researcher)
    assert job.status == Job.Status.SUCCEEDED and job.result["pushed"] == len(every_kind), job.message
    link = LabelStudioLink.objects.get(pk=job.result["link_id"])
    task_of = dict(link.tasks.values_list("item_id", "task_id"))

    context = browser.new_context()
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("console", lambda msg: problems.append(f"console error: {msg.text}") if msg.type == "error" else None)
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if _failed(r) else None)
    try:
        # As an annotator opens a project from benchforge's Label Studio page: its link, through
        # Label Studio's login, straight to the project. (Label Studio's own login and home pages
        # ask the server for tips it fetches from the internet, a 404 offline: the login page's
        # is let finish there, and the home page, which used to log it in the first task, is skipped.)
        page.goto(link.project_url)
        page.wait_for_url(lambda url: "/user/login" in url, timeout=EDITOR_TIMEOUT_S * 1000)
        page.fill("input[name=email]", USERNAME)
        page.fill("input[name=password]", PASSWORD)
        page.wait_for_load_state("networkidle")
        page.click("button[type=submit]")
        project_path = urlsplit(link.project_url).path
        page.wait_for_url(lambda url: urlsplit(url).path.rstrip("/") == project_path, timeout=EDITOR_TIMEOUT_S * 1000)
        problems.clear()

        for name, item in every_kind.items():
            page.goto(f"{ls_env.url}/projects/{link.project_id}/data?task={task_of[item.pk]}")
            # The editor is done when its controls are there (the question pre-filled with the
            # item's, the verdict) and its images loaded. A task it cannot show keeps a spinner.
            try:
                shown = f"document.body.innerText.includes({json.dumps(item.question)})"
                wait_until(page, f"document.body.innerText.includes('Needs revision') && {shown}", EDITOR_TIMEOUT_S)
                wait_until(
                    page,
                    "(() => { const imgs = [...document.querySelectorAll('img')].filter(i => i.src && !i.className.includes('avatar'));"
                    " return imgs.length > 0 && imgs.every(i => i.complete && i.naturalWidth > 0); })()",
                    EDITOR_TIMEOUT_S,
                )
            except pytest.fail.Exception as exc:
                pytest.fail(f"the {name} item (task {task_of[item.pk]}) never finished opening: {exc}; errors: {problems}")
            page.wait_for_timeout(500)  # let a late error of this task surface before the next one
            # No failed request and no console error on any task, the first one of the session included.
            assert problems == [], f"the {name} item (task {task_of[item.pk]}) opened with errors: {problems}"
            # The options and the answer key are there to be edited on multiple-choice tasks only.
            mcq = item.kind == "mcq"
            assert page.evaluate("document.body.innerText.includes('Answer key')") == mcq, name
            assert page.evaluate("document.body.innerText.includes('Options (one per line')") == mcq, name
            assert page.evaluate("document.querySelectorAll('input[name=B]').length") == (1 if mcq else 0), name
    finally:
        context.close()
