"""The interface in Chinese, in headless Chromium: a browser that asks for Chinese gets the login
page in Chinese, each role walks the pages translated so far and finds no English word outside
user content (names, descriptions, task labels) and a short list of proper names; the switch in
the header turns an English page Chinese and the choice stays with the account."""

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from benchforge.models import AccountSettings
from curation.services import load_preset
from jobs import registry
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Words that are the same in a Chinese interface: proper names, technical names (LLM, URL, zip)
# and keys named in help text.
ALLOWED = {"benchforge", "API", "English", "Label", "Studio", "N", "Shift", "LLM", "URL", "zip"}
# What people wrote or named (not interface text): hidden before the page's text is read.
USER_CONTENT = [
    ".user-content",
    ".brand",
    ".topbar-here",
    ".bench-name",
    ".user",
    "code",
    "kbd",
    "#benchmarks tbody td",
    "#queue tbody td:first-child",
    "#review-queue tbody td:nth-child(3)",
    "#stage-counts tbody td:nth-child(-n+2)",
    "#progress-people tbody td:first-child",
    "#progress-tasks tbody td:first-child",
    # task names and the benchmark's guidelines in the item editor and the item list's filters
    "#task-select",
    "#guideline [data-field]",
    "#item-filters select[name=task]",
    "#open-round select[name=tasks]",
    "#grid-filters select[name=task]",
    ".tile .tag",
]
# Pages translated so far, per role (URL names: "home" and "password-change" take no argument,
# "item-edit" the benchmark's slug and the draft's id, the others the benchmark's slug).
PAGES = {
    "annotator": ["home", "dashboard", "queue", "item-list", "item-edit", "image-grid", "password-change"],
    "reviewer": ["home", "dashboard", "queue", "review-queue", "password-change"],
    "researcher": ["home", "dashboard", "queue", "review-queue", "item-list", "item-edit", "image-grid", "password-change"],
}


def english_words(page, names=()) -> list[str]:
    """English words in the page's title and visible text, less user content and `names` (what
    people named, shown inside interface text: the benchmark in the title)."""
    text = page.evaluate(
        """selectors => {
            document.querySelectorAll('details').forEach(d => d.open = true);  // folded text counts too
            for (const s of selectors) document.querySelectorAll(s).forEach(e => e.style.display = 'none');
            return document.title + '\\n' + document.body.innerText;
        }""",
        USER_CONTENT,
    )
    for name in names:
        text = text.replace(name, "")
    return sorted({w for w in re.findall(r"[A-Za-z]{2,}", text) if w not in ALLOWED})


@pytest.fixture
def world(make_user):
    from annotation.services import create_item

    demo = load_preset("alignmmbench", slug="demo")
    anna = make_user("annotator", "anna", benchmarks=[demo])
    # a draft: its stage shows on the dashboard, the item list and the editor
    draft = create_item(demo, task=demo.tasks.first(), user=anna, assignee=anna)
    return {
        "benchmark": demo,
        "draft": draft,
        "annotator": anna,
        "reviewer": make_user("reviewer", "rita", benchmarks=[demo]),
        "researcher": make_user("researcher", "ross"),
    }


@pytest.fixture
def chinese_page(browser, live_server):
    """A page in a browser whose language is Chinese (it sends Accept-Language: zh-CN)."""
    context = browser.new_context(base_url=live_server.url, locale="zh-CN")
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()


def log_in(page, user):
    page.context.clear_cookies()
    page.goto("/accounts/login/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_load_state()


def test_the_login_page_follows_the_browser_language(chinese_page):
    chinese_page.goto("/accounts/login/")
    assert chinese_page.locator("h1").inner_text() == "登录"
    assert english_words(chinese_page) == []
    chinese_page.fill("input[name=username]", "nobody")
    chinese_page.fill("input[name=password]", "wrong")
    chinese_page.click("main button[type=submit]")
    expect(chinese_page.locator("p.error")).to_contain_text("用户名或密码错误")
    assert english_words(chinese_page) == []


@pytest.mark.parametrize("role", ["annotator", "reviewer", "researcher"])
def test_each_role_sees_no_english_interface_text_in_chinese(chinese_page, world, role):
    log_in(chinese_page, world[role])
    slug = world["benchmark"].slug
    # what people named: the benchmark, and the people listed in the item list's filters
    names = [world["benchmark"].name, world["benchmark"].description, "anna", "rita", "ross"]
    for name in PAGES[role]:
        if name in ("home", "password-change"):
            url = reverse(name)
        elif name == "item-edit":
            url = reverse(name, args=[slug, world["draft"].pk])
        else:
            url = reverse(name, args=[slug])
        response = chinese_page.goto(url)
        assert response.status == 200, url
        assert chinese_page.locator("html").get_attribute("lang") == "zh-hans"
        assert english_words(chinese_page, names) == [], url
        if name == "dashboard":
            assert "草稿" in chinese_page.locator("#stage-counts thead").inner_text()  # the draft's stage, translated
        if name == "item-edit":
            # what the draft still lacks, from the service, in Chinese
            expect(chinese_page.locator("#readiness")).to_contain_text("请编写问题。")
    # the styled error page, inside the benchmark's navigation
    assert chinese_page.goto(f"/b/{slug}/no-such-page/").status == 404
    assert chinese_page.locator("h1").inner_text() == "未找到"
    assert english_words(chinese_page, [world["benchmark"].name, world["benchmark"].description]) == []


def test_the_switch_in_the_header_keeps_the_choice_on_the_account(login_as, world, browser, live_server):
    page = login_as(world["annotator"])
    queue = reverse("queue", args=[world["benchmark"].slug])
    page.goto(queue)
    assert page.locator("h1").inner_text() == "My queue"
    page.click("#language-switch button[value=zh-hans]")
    expect(page.locator("h1")).to_have_text("我的队列")
    assert page.url.endswith(queue)  # back on the same page
    assert AccountSettings.objects.get(user=world["annotator"]).language == "zh-hans"
    # a fresh English browser: once logged in, the account's language
    context = browser.new_context(base_url=live_server.url, locale="en-US")
    other = context.new_page()
    log_in(other, world["annotator"])
    other.goto(queue)
    assert other.locator("h1").inner_text() == "我的队列"
    other.click("#language-switch button[value=en]")
    expect(other.locator("h1")).to_have_text("My queue")
    context.close()


def test_the_editors_script_speaks_the_pages_language(chinese_page, world):
    """The words the editor's script writes (the question's label, the exchanges' numbers) come
    from the page, so they are Chinese too."""
    log_in(chinese_page, world["annotator"])
    chinese_page.goto(reverse("item-edit", args=[world["benchmark"].slug, world["draft"].pk]))
    chinese_page.check("input[name=kind][value=multi_turn]")
    expect(chinese_page.locator("#question-label")).to_have_text("最后的用户问题")
    chinese_page.click("[data-action=add-exchange]")
    expect(chinese_page.locator("#exchanges .exchange-n").first).to_have_text("交流 1")
    assert english_words(chinese_page, [world["benchmark"].name, world["benchmark"].description]) == []
    chinese_page.check("input[name=kind][value=single_turn]")
    expect(chinese_page.locator("#question-label")).to_have_text("问题")


@pytest.fixture
def in_review(world):
    """A complete item of anna's (Chinese content, an accepted image) in an open cross-review
    round that rita reviews."""
    from annotation.services import create_item, submit_item, update_item
    from curation.services import ingest_image, screen_images
    from review.services import open_round
    from tests.factories import complete_fields, jpeg

    demo, anna = world["benchmark"], world["annotator"]
    task = demo.tasks.get(slug="counting")
    image = ingest_image(demo, jpeg(8801), tasks=[task]).image
    screen_images(demo, [image.pk], action="accept", user=world["researcher"])
    item = create_item(demo, task=task, user=anna, assignee=anna)
    fields = complete_fields(
        image,
        question="桌上有几个苹果？",
        reference_answer="木桌上有三个红苹果，左边两个，右边一个。",
        criteria=[{"kind": "exact", "text": "数量是三个。"}],
    )
    item = submit_item(update_item(item, fields, expected_version=item.version, user=anna), user=anna)
    review_round = open_round(demo, user=world["researcher"], reviewers=[world["reviewer"]])
    review_round.refresh_from_db()
    assert review_round.status == "open", review_round.job.message
    return item


def test_a_review_in_chinese_from_the_reviewer_to_the_author(chinese_page, world, in_review):
    """The reviewer's pages (review home, the review page with its verdicts and reasons), the
    author's feedback panel in the editor, the researcher's round table and form and the job list: no English."""
    slug = world["benchmark"].slug
    names = [world["benchmark"].name, world["benchmark"].description, "anna", "rita", "ross"]
    log_in(chinese_page, world["reviewer"])
    chinese_page.goto(reverse("review-home", args=[slug]))
    assert english_words(chinese_page, names) == []
    chinese_page.click("#review-start")
    expect(chinese_page.locator("#verdict-form")).to_be_visible()
    assert english_words(chinese_page, names) == [], chinese_page.url
    assert "事实错误（与图片矛盾）" in chinese_page.locator("#verdict-form").inner_text()  # a reason, translated
    chinese_page.check("input[name=verdict][value=revision]")
    chinese_page.check("input[name=reasons][value=incomplete]")
    chinese_page.fill("textarea[name=comment]", "请写明苹果的颜色。")
    chinese_page.click("#submit-review")
    expect(chinese_page.locator("#review-queue")).to_be_visible()
    assert english_words(chinese_page, names) == []  # the saved message included

    log_in(chinese_page, world["annotator"])
    chinese_page.goto(reverse("item-edit", args=[slug, in_review.pk]))
    expect(chinese_page.locator("#review-feedback")).to_contain_text("第 1 轮审核：需修改")
    expect(chinese_page.locator("#review-feedback")).to_contain_text("不完整（评判者没有图片就无法评分）")
    assert english_words(chinese_page, names) == []

    log_in(chinese_page, world["researcher"])
    chinese_page.goto(reverse("review-home", args=[slug]))
    expect(chinese_page.locator("#rounds")).to_contain_text("交叉审核")
    assert english_words(chinese_page, names) == []
    # the job that opened the round, in the job list (its kind and status translated)
    chinese_page.goto(reverse("job-list"))
    expect(chinese_page.locator("#jobs")).to_contain_text("审核轮次开启")
    # kinds that test modules register (tests/jobs, tests/llm...) are listed too in a whole-suite session
    test_kinds = sorted(
        (registry.label(name) for name in registry.names() if registry.get(name).run.__module__.startswith("tests.")),
        key=len,
        reverse=True,
    )
    assert english_words(chinese_page, [*names, *test_kinds]) == []


def test_screening_in_chinese_with_the_keyboard(chinese_page, world):
    """The screening grid with images to screen, and what its script says after an action."""
    from curation.services import ingest_image
    from tests.factories import jpeg

    demo = world["benchmark"]
    task = demo.tasks.get(slug="counting")
    images = [ingest_image(demo, jpeg(8810 + n), tasks=[task]).image for n in range(2)]
    log_in(chinese_page, world["annotator"])
    chinese_page.goto(reverse("image-grid", args=[demo.slug]))
    names = [demo.name, demo.description]
    assert english_words(chinese_page, names) == []
    chinese_page.keyboard.press("a")  # accept the focused (first) image
    expect(chinese_page.locator("#screen-message")).to_have_text(f"已通过 #{images[0].pk}")
    expect(chinese_page.locator(f'.tile[data-id="{images[0].pk}"] .state')).to_have_text("已通过")
    chinese_page.keyboard.press("2")  # reject the next: personal privacy
    expect(chinese_page.locator("#screen-message")).to_have_text(f"已拒绝 #{images[1].pk} (个人隐私)")
    chinese_page.keyboard.press("x")  # select one: the count is the script's, in Chinese
    expect(chinese_page.locator("#selection-count")).to_contain_text("已选中 1 张")
    assert english_words(chinese_page, names) == []


def test_verifying_rewrites_in_chinese(chinese_page, world):
    """The reviewer's rewrite verification page for an accepted seed with a rewrite written by
    hand (by the researcher), and approving it: no English."""
    from annotation.models import Item
    from annotation.services import create_item, submit_item, update_item
    from curation.services import ingest_image, screen_images
    from rewrite.services.verification import add_manual
    from tests.factories import complete_fields, jpeg

    demo, anna = world["benchmark"], world["annotator"]
    task = demo.tasks.get(slug="counting")
    image = ingest_image(demo, jpeg(8820), tasks=[task]).image
    screen_images(demo, [image.pk], action="accept", user=world["researcher"])
    seed = create_item(demo, task=task, user=anna, assignee=anna)
    fields = complete_fields(
        image, question="桌上有几个苹果？", reference_answer="三个。", criteria=[{"kind": "exact", "text": "三个。"}]
    )
    seed = submit_item(update_item(seed, fields, expected_version=seed.version, user=anna), user=anna)
    Item.objects.filter(pk=seed.pk).update(status="accepted")  # as if its review rounds accepted it
    add_manual(Item.objects.get(pk=seed.pk), user=world["researcher"], text="桌子上一共有多少个苹果？")

    log_in(chinese_page, world["reviewer"])
    chinese_page.goto(reverse("rewrite-seed", args=[demo.slug, seed.pk]))
    names = [demo.name, demo.description, "anna", "rita", "ross"]
    assert english_words(chinese_page, names) == []
    chinese_page.click(".approve-button")
    expect(chinese_page.locator("main")).to_contain_text("已批准：现在是题目 #")
    assert english_words(chinese_page, names) == []


# ---- assignment, import, history, round, curation, lockouts, Label Studio and job pages ----------------

# Proper and technical names these pages show: presets, file formats, hashes, size units, statistics
# named after people, the Label Studio environment variable, the library that prints pHashes.
ALLOWED.update(
    {"AlignMMBench", "MMBench", "MLLM", "Bench", "TouchStone", "alignmmbench", "JPEG", "PNG", "WebP", "GIF", "BMP"}
    | {"TIFF", "CSV", "TXT", "JSON", "JSONL", "MD", "pHash", "dHash", "SFT", "KB", "MB", "HTTP", "CC", "BY", "OK"}
    | {"Cohen", "kappa", "Kappa", "Krippendorff", "alpha", "LABEL", "STUDIO", "imagehash"}
)
# Task names in the selects of these pages' forms.
USER_CONTENT += [
    "#new-item select[name=task]",
    "#upload-form select[name=tasks]",
    "#import-form select[name=tasks]",
    "#labelstudio-push select[name=task]",
]


def url_of(name, world, extra):
    """The page `name` for this world: no argument, the benchmark's slug, or the slug and more."""
    slug = world["benchmark"].slug
    args = {
        "benchmark-create": [],
        "known-sets": [],
        "lockouts": [],
        "item-history": [slug, world["draft"].pk],
        "task-edit": [slug, "counting"],
        "review-round": [slug, extra["round"].number],
        "job-detail": [extra["round"].job_id],
        "preset-job": [extra["preset_job"].pk],
    }.get(name, [slug])
    return reverse("job-detail" if name == "preset-job" else name, args=args)


MORE_PAGES = {
    "annotator": ["item-new", "item-history", "taxonomy", "image-upload", "near-duplicates", "contamination"],
    "reviewer": ["taxonomy", "near-duplicates", "contamination"],
    "researcher": [
        *["assign", "item-import", "item-new", "item-history", "review-round", "taxonomy", "task-edit"],
        *["benchmark-create", "benchmark-settings", "image-upload", "near-duplicates", "contamination", "known-sets"],
        *["lockouts", "labelstudio", "job-detail", "preset-job"],
    ],
}


@pytest.fixture
def curated(world, in_review):
    """What these pages show when there is something to show: a near-duplicate pair, an image
    matching a known set, a closed-off round with its opening job, a preset job, a Label Studio
    project gone from its server and a locked username and address."""
    from django.conf import settings
    from django.test import Client
    from django.utils import timezone

    from curation.services import import_known_set, ingest_image, start_preset_load
    from labelstudio.models import LabelStudioLink
    from review.models import ReviewRound
    from tests.factories import jpeg

    demo, ross = world["benchmark"], world["researcher"]
    ingest_image(demo, jpeg(8830, quality=95))
    near = ingest_image(demo, jpeg(8830, quality=60)).image
    assert near.near_duplicate_of is not None
    seen = ingest_image(demo, jpeg(8831)).image
    import_known_set(name="早期训练集", kind="sft", rows=[{"md5": seen.md5, "phash": None}], user=ross)
    preset_job = start_preset_load(demo, "alignmmbench", user=ross)
    LabelStudioLink.objects.create(
        benchmark=demo, url="http://127.0.0.1:9", project_id=7, title="第一批核对", created_by=ross, gone_at=timezone.now()
    )
    for _ in range(settings.AXES_FAILURE_LIMIT):
        Client().post("/accounts/login/", {"username": "mallory", "password": "guess"}, REMOTE_ADDR="10.9.9.9")
    return {"round": ReviewRound.objects.get(benchmark=demo), "preset_job": preset_job}


@pytest.mark.parametrize("role", ["annotator", "reviewer", "researcher"])
def test_the_curation_assignment_and_job_pages_have_no_english_in_chinese(chinese_page, world, curated, role):
    demo = world["benchmark"]
    # what people named: the benchmark, people, and the edited task (in the task page's title)
    names = [demo.name, demo.description, demo.tasks.get(slug="counting").name, "anna", "rita", "ross", "mallory"]
    log_in(chinese_page, world[role])
    for name in MORE_PAGES[role]:
        url = url_of(name, world, curated)
        response = chinese_page.goto(url)
        assert response.status == 200, url
        assert english_words(chinese_page, names) == [], url
        if name == "contamination":
            expect(chinese_page.locator("#contamination-report")).to_contain_text("MD5（字节相同）")
        if name == "near-duplicates":
            expect(chinese_page.locator("main")).to_contain_text("保留两张")
        if name == "lockouts":
            expect(chinese_page.locator("#lockouts")).to_contain_text("用户名")
        if name == "job-detail":  # the round opening's notes, stored in English, read in Chinese
            expect(chinese_page.locator("main")).to_contain_text("分配给 rita")
        if name == "preset-job":
            expect(chinese_page.locator("main")).to_contain_text("分类体系有")


def test_a_locked_login_is_told_in_chinese(chinese_page, world, curated):
    chinese_page.goto("/accounts/login/")
    chinese_page.fill("input[name=username]", "mallory")
    chinese_page.fill("input[name=password]", "guess again")
    chinese_page.click("main button[type=submit]")
    expect(chinese_page.locator("h1")).to_have_text("登录已锁定")
    expect(chinese_page.locator("p.error")).to_contain_text("登录失败次数过多")
    assert english_words(chinese_page) == []
