"""The interface in English and Simplified Chinese: the catalog is complete and up to date with the
code, the browser's language is the default, a person's choice is kept on their account, and the
API keeps English names while its `detail` messages follow Accept-Language."""

import shutil
import subprocess
import sys

import pytest
from django.urls import reverse

from benchforge import catalogs
from benchforge.models import AccountSettings
from tests.conftest import REPO_ROOT

CHINESE = REPO_ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"


def test_the_chinese_catalog_has_no_untranslated_or_fuzzy_entry():
    assert CHINESE.is_file()
    assert catalogs.problems(CHINESE) == []


def test_no_interface_text_hides_behind_a_translation_alias_makemessages_cannot_see():
    # qc/forms.py imported gettext as gettext_now: "vision" and "none: rules only" never reached
    # the catalog and stayed English in the Chinese interface, while the catalog looked complete.
    assert catalogs.hidden_translations() == []


def test_the_alias_check_finds_an_import_alias_and_an_assignment(tmp_path):
    (tmp_path / "forms.py").write_text(
        "from django.utils.translation import gettext as gettext_now, gettext_lazy as _\nt = gettext_now\n"
    )
    found = catalogs.hidden_translations(tmp_path)
    assert found == ["forms.py:1: gettext imported as gettext_now"]


def test_the_compiled_catalog_is_not_older_than_its_source():
    compiled = CHINESE.with_suffix(".mo")
    assert compiled.is_file() and compiled.stat().st_mtime >= CHINESE.stat().st_mtime, (
        "locale/zh_Hans/LC_MESSAGES/django.mo is missing or older than django.po: run `make setup`"
    )


# Only what holds interface text is copied: makemessages reads .py, .html and .txt files.
_SKIPPED = {".git", ".venv", "var", "staticfiles", "media", "node_modules", "__pycache__", "tests", "benchforge_harness", "bench"}


def _copy_sources(target):
    def ignore(folder, names):
        return [n for n in names if n in _SKIPPED or n.endswith((".png", ".jpg", ".sqlite3", ".mo"))]

    shutil.copytree(REPO_ROOT, target, ignore=ignore)


def test_the_chinese_catalog_is_up_to_date_with_the_code(tmp_path):
    """What `make messages` would change: an entry for text the code no longer has, or none for new text."""
    if shutil.which("xgettext") is None or shutil.which("msgmerge") is None:
        from tests.conftest import require

        require(False, "GNU gettext (xgettext, msgmerge) to run makemessages (.ci/run installs it)")
    copy = tmp_path / "repo"
    _copy_sources(copy)
    subprocess.run(
        [sys.executable, "manage.py", "makemessages", "-l", "zh_Hans", *catalogs.MAKEMESSAGES_OPTIONS],
        cwd=copy,
        check=True,
        capture_output=True,
    )
    committed, current = catalogs.entry_keys(CHINESE), catalogs.entry_keys(copy / CHINESE.relative_to(REPO_ROOT))
    assert not current - committed, (
        f"text marked for translation but not in the catalog (run `make messages`): {sorted(current - committed)[:10]}"
    )
    assert not committed - current, (
        f"catalog entries the code no longer has (run `make messages`): {sorted(committed - current)[:10]}"
    )


# ---- pages


@pytest.fixture
def anna(make_user, benchmark):
    return make_user("annotator", "anna", benchmarks=[benchmark])


def test_the_browser_language_is_the_default(client, db):
    assert "用户名或密码错误" not in client.post(reverse("login"), {"username": "x", "password": "y"}).content.decode()
    page = client.post(
        reverse("login"), {"username": "x", "password": "y"}, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9,en;q=0.5"
    ).content.decode()
    assert '<html lang="zh-hans">' in page and "用户名或密码错误" in page and "Wrong username" not in page


def test_the_language_chosen_is_kept_on_the_account(client, anna, benchmark):
    client.force_login(anna)
    page = client.get(reverse("queue", args=[benchmark.slug])).content.decode()
    assert "My queue" in page and 'value="zh-hans"' in page  # English, with the switch to Chinese
    response = client.post(reverse("set-language"), {"language": "zh-hans", "next": reverse("home")})
    assert response.status_code == 302 and response["Location"] == reverse("home")
    assert AccountSettings.objects.get(user=anna).language == "zh-hans"
    assert "我的队列" in client.get(reverse("queue", args=[benchmark.slug])).content.decode()

    # another browser that asks for English: the account's choice wins once logged in
    from django.test import Client

    other = Client(HTTP_ACCEPT_LANGUAGE="en")
    other.force_login(anna)
    page = other.get(reverse("queue", args=[benchmark.slug])).content.decode()
    assert "我的队列" in page and "标注员" in page and "My queue" not in page

    # back to the browser's language
    other.post(reverse("set-language"), {"language": ""})
    assert AccountSettings.objects.get(user=anna).language == ""
    assert "My queue" in other.get(reverse("queue", args=[benchmark.slug])).content.decode()


def test_an_unknown_language_or_an_outside_next_is_not_taken(client, anna):
    client.force_login(anna)
    response = client.post(reverse("set-language"), {"language": "xx", "next": "https://evil.example/"})
    assert response["Location"] == "/" and AccountSettings.objects.get(user=anna).language == ""
    assert client.get(reverse("set-language")).status_code == 405


def test_the_api_keeps_english_names_and_translates_detail_when_asked(client, anna, benchmark, api_for):
    refused = client.get("/api/v1/benchmarks/", HTTP_ACCEPT_LANGUAGE="zh-Hans")
    assert refused.status_code in (401, 403) and "身份认证信息未提供" in refused.json()["detail"]
    assert "credentials were not provided" in client.get("/api/v1/benchmarks/").json()["detail"]
    nowhere = client.get("/api/v1/no-such-thing/", HTTP_ACCEPT_LANGUAGE="zh-Hans")
    assert nowhere.status_code == 404 and nowhere.json() == {
        "detail": "这个地址没有内容，或者它属于一个你不是成员的基准。",
        "code": "not_found",  # codes and field names stay English
    }
    # a Chinese account does not turn the API Chinese: only the request's Accept-Language does
    AccountSettings.objects.create(user=anna, language="zh-hans")
    client.force_login(anna)
    listed = client.get("/api/v1/benchmarks/").json()
    assert "slug" in str(listed)
    missing = client.get("/api/v1/benchmarks/no-such/")
    assert missing.status_code == 404 and not any("\u4e00" <= ch <= "\u9fff" for ch in missing.json()["detail"])


def test_the_server_error_page_follows_the_language_and_needs_no_database(rf):
    """The 500 page is rendered without the request's context (the failure may be the database):
    it still speaks the request's language."""
    from django.utils import translation

    from benchforge.views import server_error

    with translation.override("zh-hans"):
        page = server_error(rf.get("/b/demo/")).content.decode()
    assert '<html lang="zh-hans">' in page and "我们这边出了问题" in page and "went wrong" not in page
    english = server_error(rf.get("/b/demo/")).content.decode()
    assert '<html lang="en">' in english and "Something went wrong on our side" in english


def test_a_stored_job_report_is_read_in_the_readers_language():
    """Runners store report texts in English; a text made from a declared template reads in Chinese
    where it is shown, values kept, and any other text is shown as stored."""
    from django.utils import translation

    from annotation.alignmmbench import IMPORTED, IMPORTED_WITHOUT_IMAGES
    from jobs import reports
    from review.services import TO_REVIEWERS

    stored = reports.text(TO_REVIEWERS, reviewers="rita, rob")
    assert stored == "to rita, rob"
    with translation.override("zh-hans"):
        assert reports.shown(stored) == "分配给 rita, rob"
        assert reports.shown(reports.text("item %(id)s", id=12)) == "题目 12"
        assert reports.shown("ConnectionError: refused") == "ConnectionError: refused"
        assert reports.result_label("reviews") == "审核" and reports.result_label("files_seen") == "Files seen"
    assert reports.shown(stored) == stored
    # of two declared summaries, the one the text was made from (the longer one here)
    counts = dict(imported=3, seeds=2, rewrites=1, multi_turn=0, already_imported=0, errors=1, images_not_provided=2)
    summary = reports.text(IMPORTED_WITHOUT_IMAGES, **counts)
    with translation.override("zh-hans"):
        assert reports.shown(summary).startswith("已导入 3 道题目（2 道种子题目") and "2 张图片未提供" in reports.shown(summary)
        assert reports.shown(reports.text(IMPORTED, **counts)).endswith("1 行有错误。")


def test_texts_kept_per_language_are_built_once_per_language_and_again_after_a_catalog_change():
    from django.test import override_settings
    from django.utils.translation import gettext, override

    from benchforge.i18n import PerLanguage

    built = []

    def build():
        built.append(1)
        return gettext("Save")

    kept = PerLanguage(build)
    seen = []
    for language in ("en", "zh-hans", "en", "zh-hans"):
        with override(language):
            seen.append(kept.get())
    assert seen == ["Save", "保存", "Save", "保存"] and len(built) == 2
    with override_settings(LOCALE_PATHS=[]), override("zh-hans"):
        kept.get()
    assert len(built) == 3
