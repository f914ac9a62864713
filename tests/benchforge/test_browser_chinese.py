"""The interface in Chinese, in headless Chromium: a browser that asks for Chinese gets the login
page in Chinese, each role walks the pages translated so far and finds no English word outside
user content (names, descriptions, task labels) and a short list of proper names; the switch in
the header turns an English page Chinese and the choice stays with the account."""

import base64
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from playwright.sync_api import expect

from benchforge.models import AccountSettings
from curation.services import load_preset
from jobs import registry
from tests.conftest import log_in

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


# ---- Later stages: rewrite batches, QC, releases and scores, human evaluation ----------------------
# (their own world, pages and checks; kept apart from the blocks above)

from tests.llm.conftest import _llm_settings, declare  # noqa: E402, F401 - the models file on the loopback server

# Names of formats, methods and statistics, the same in a Chinese interface.
ALLOWED |= {
    "CircularEval", "MMBench", "MLLM", "Bench", "AlignMMBench", "TSV", "JSON", "JSONL", "Lines", "Parquet",
    "Hugging", "Face", "README", "md", "metadata", "jsonl", "base", "sha", "GLM", "zhipuai", "TouchStone",
    "Krippendorff", "Pearson", "Spearman", "Kendall", "Ctrl", "Enter", "tar", "gz", "KB", "MB",
    "id", "answer",  # field names of the predictions format, in the score form's help
}  # fmt: skip
# What people named in the later stages' forms: endpoints of the models file, task labels, template names.
USER_CONTENT += [
    "select[name=endpoint]",
    "select[name=template_version]",
    "select[name=models]",
    "select[name=extractor]",
    "select[name=judge]",
    "select[name=tasks]",
    "#new-release [name=tasks]",
    "#dataset-card",  # the bundle's README, English as it ships
    "#reproduce",  # shell commands
]
LATER_PAGES = {
    "annotator": ["release-list", "release-detail", "release-card", "release-leaderboard", "release-score",
                  "humaneval-home", "humaneval-queue", "humaneval-rate"],
    "reviewer": ["rewrite-home", "rewrite-batch", "rewrite-templates", "rewrite-template",
                 "humaneval-home", "humaneval-queue", "humaneval-rate"],
    "researcher": ["rewrite-home", "rewrite-batch", "rewrite-templates", "rewrite-template", "qc-home", "qc-run",
                   "qc-flagged", "qc-item", "qc-import", "release-list", "release-detail", "release-diff", "release-card",
                   "release-leaderboard", "release-score", "humaneval-home", "humaneval-plan", "humaneval-study"],
}  # fmt: skip


def _letter_of_right_option(body) -> str:
    """A model that always picks the right option (the one whose text says 正确), image or not."""
    from tests.qc.conftest import prompt_of

    return next(letter for letter, text in re.findall(r"^([A-D])\. (.*)$", prompt_of(body), re.M) if "正确" in text)


@pytest.fixture
def later_stages(world, declare, fake_llm):  # noqa: F811 - declare is the fixture imported above
    """On the demo benchmark: accepted Chinese seeds rewritten by a finished batch; multiple-choice
    items a finished text-only QC run flagged (a model answers them without the image); release
    1.0.0 frozen with a pointwise score judged on the loopback server, and 1.1.0 built after it;
    a pointwise human-evaluation study that anna and rita rate."""
    from annotation.services import create_item
    from curation.services import ingest_image, screen_images
    from exports import leaderboard
    from exports import services as releases
    from humaneval import services as humaneval
    from qc import services as qc
    from rewrite import services as rewrite
    from tests.factories import complete_fields, jpeg
    from tests.rewrite.conftest import five, question_of

    demo, ross = world["benchmark"], world["researcher"]
    counting, ocr = demo.tasks.get(slug="counting"), demo.tasks.get(slug="ocr")
    # ross chose Chinese on his account: the jobs he starts write their reports in it
    AccountSettings.objects.update_or_create(user=ross, defaults={"language": "zh-hans"})

    def image(n, task):
        found = ingest_image(demo, jpeg(8830 + n), tasks=[task]).image
        screen_images(demo, [found.pk], action="accept", user=ross)
        return found

    for n, question in enumerate(["图中有几只猫？", "桌子上的杯子是什么颜色？"]):
        fields = complete_fields(
            image(n, counting),
            question=question,
            reference_answer=f"参考答案{n}：三只。",
            criteria=[{"kind": "exact", "text": "数量是三。"}],
        )
        create_item(demo, task=counting, user=world["annotator"], status="accepted", **fields)
    for n in range(2):
        fields = complete_fields(
            image(5 + n, ocr), question=f"牌子上写的是什么？（{n}）", reference_answer="“出口”。", criteria=[]
        )
        fields.update(choices=["入口", "出口（正确）", "停车场"], answer="B")
        create_item(demo, task=ocr, user=world["annotator"], kind="mcq", status="accepted", **fields)

    declare("g1", provider="zhipuai", model="g4")
    fake_llm.script("g4", lambda body: five(question_of(body)))
    batch = rewrite.start_batch(demo, user=ross, endpoint="g1")
    batch.refresh_from_db()
    assert batch.status == "finished", batch.job.message

    declare("k1", model="k1")
    fake_llm.script("k1", _letter_of_right_option)
    run = qc.start_run(demo, user=ross, filter="text_only", models=["k1"])
    run.refresh_from_db()
    assert run.status == "finished" and run.entries.filter(flagged=True).count() == 2, run.status

    release = releases.create_release(demo, user=ross, version="1.0.0")
    releases.start_build(release, user=ross)
    release = releases.freeze(type(release).objects.get(pk=release.pk), user=ross)
    declare("j1", model="j2", vision=True)
    fake_llm.script("j2", lambda body: json.dumps({"rating": 7, "reason": "大体正确。"}, ensure_ascii=False))
    ids = [row["id"] for row in release.items.values_list("row", flat=True) if not row["choices"]]
    predictions = "".join(json.dumps({"id": i, "answer": "三只猫。"}, ensure_ascii=False) + "\n" for i in ids)
    score = leaderboard.submit(
        release, user=ross, label="模型甲", method="pointwise", predictions=predictions.encode(), judge="j1"
    )
    score.refresh_from_db()
    assert score.status == "done", score.job.message
    later = releases.create_release(demo, user=ross, version="1.1.0")
    releases.start_build(later, user=ross)

    # an MMBench TSV imported into a new external benchmark: one row imports, one has a gap in its options
    header = ["index", "question", "A", "B", "C", "D", "answer", "category", "l2-category", "split", "image"]
    picture = base64.b64encode(jpeg(8840)).decode()
    rows = [header, ["1", "图中是什么动物？", "猫", "狗", "", "", "A", "识别", "感知", "dev", picture]]
    rows.append(["2", "图中有几只猫？", "一只", "", "三只", "", "A", "识别", "感知", "dev", picture])
    upload = SimpleUploadedFile("外部.tsv", "".join("\t".join(r) + "\n" for r in rows).encode())
    imported = qc.start_import(user=ross, file=upload, format="mmbench_tsv", name="MMBench 外部")

    study = humaneval.create_study(
        release,
        user=ross,
        title="评判模型可信吗",
        mode="pointwise",
        scores=[score],
        raters=[world["annotator"], world["reviewer"]],
        per_task=1,
        ratings_per_item=2,
    )
    return {
        "batch": batch,
        "run": run,
        "release": release,
        "score": score,
        "study": study,
        "template": batch.template_version.template,
        "import": imported,
    }


def _later_url(name, slug, state, user) -> str:
    version, study = state["release"].version, state["study"]
    if name in ("rewrite-home", "rewrite-templates", "qc-home", "release-list", "humaneval-home", "humaneval-plan"):
        return reverse(name, args=[slug])
    if name == "qc-import":
        return reverse(name) + f"?job={state['import'].pk}"
    if name == "rewrite-batch":
        return reverse(name, args=[slug, state["batch"].number])
    if name == "rewrite-template":
        return reverse(name, args=[slug, state["template"].pk])
    if name in ("qc-run", "qc-flagged"):
        return reverse(name, args=[slug, state["run"].number])
    if name == "qc-item":
        return reverse(name, args=[slug, state["run"].number, state["run"].entries.filter(flagged=True).first().item_id])
    if name in ("release-detail", "release-card", "release-leaderboard"):
        return reverse(name, args=[slug, version])
    if name == "release-diff":
        return reverse(name, args=[slug, "1.1.0"]) + f"?against={version}&show=changed"
    if name == "release-score":
        return reverse(name, args=[slug, version, state["score"].pk])
    if name in ("humaneval-study", "humaneval-queue"):
        return reverse(name, args=[slug, study.number])
    if name == "humaneval-rate":
        return reverse(name, args=[slug, study.number, study.ratings.filter(rater__user=user).first().pk])
    raise AssertionError(name)


@pytest.mark.parametrize("role", ["annotator", "reviewer", "researcher"])
def test_the_later_stages_show_no_english_interface_text_in_chinese(chinese_page, world, later_stages, role):
    user = world[role]
    log_in(chinese_page, user)
    slug = world["benchmark"].slug
    # what people named: the benchmark, the people, the imported file
    names = [world["benchmark"].name, world["benchmark"].description, "anna", "rita", "ross", "外部.tsv"]
    for name in LATER_PAGES[role]:
        url = _later_url(name, slug, later_stages, user)
        response = chinese_page.goto(url)
        assert response.status == 200, url
        assert english_words(chinese_page, names) == [], url
        if name == "rewrite-batch":  # the job's report, written in the language on ross's account
            expect(chinese_page.locator(".job-message")).to_contain_text("2 道种子题目中 2 道已改写")
        if name == "qc-run":
            expect(chinese_page.locator("#qc-summary")).to_contain_text("2 道题目中 2 道被标记")
        if name == "qc-import":  # the row that was not imported, by line, in the language on ross's account
            expect(chinese_page.locator("#qc-import-errors")).to_contain_text("第 3 行")
            expect(chinese_page.locator("#qc-import-errors")).to_contain_text("选项 B 为空")
        if name == "release-detail":
            expect(chinese_page.locator("#withheld")).to_contain_text("公开包，测试集：不含正确答案、参考答案和逐题评分标准")
        if name == "humaneval-rate":
            expect(chinese_page.locator("#rating-form h2")).to_have_text("你的分数")


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
