"""Prompt templates for rewriting a seed question, and the messages of a first request and of its
one corrective retry (no Django).

A template is plain text with these placeholders (other braces are left as they are):
  {question}  the seed question
  {n}         how many rewrites to write, as digits
  {count}     the same number in words of the template's language ("five", "五")
  {options}   the options of a multiple-choice seed, one per line ("A. ..."), else empty
"""

from __future__ import annotations

import re

from django.utils.translation import gettext

PLACEHOLDERS = ("question", "n", "count", "options")
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")
LANGUAGES = {"zh": "中文", "en": "English"}

DEFAULT_TEMPLATES = {
    "zh": (
        "请把下面这个关于图片的问题改写成{count}个新的问法。\n"
        "要求：\n"
        "1. 每个改写的意思必须和原问题完全相同：看到同一张图片的人，对原问题和改写给出的答案应当一样；\n"
        "2. 每个改写换一种说法或语气（口语、书面、简洁、委婉、换个句式等），不要只改一两个字；\n"
        "3. 不要添加原问题没有的信息，也不要回答问题；\n"
        "4. 只输出{n}行，每行一个改写，不要编号、引号、标题或任何解释。\n"
        "{options}"
        "原问题：{question}"
    ),
    "en": (
        "Rewrite the question below, which is asked about an image, in {count} new ways.\n"
        "Rules:\n"
        "1. Each rewrite must mean exactly the same: anyone looking at the same image should give the same "
        "answer to the original and to the rewrite.\n"
        "2. Vary the style from one rewrite to the next (casual, formal, terse, polite, a different sentence "
        "structure); changing a word or two is not enough.\n"
        "3. Add nothing the original does not say, and do not answer it.\n"
        "4. Output exactly {n} lines, one rewrite per line, with no numbering, quotes, headings or comments.\n"
        "{options}"
        "Question: {question}"
    ),
}

_OPTIONS_INTRO = {
    "zh": "这是一道选择题，选项如下（选项不变，只改写问题本身）：\n{lines}\n",
    "en": "It is a multiple-choice question with these options (keep them; rewrite only the question):\n{lines}\n",
}
_NUMBER_WORDS = {
    "zh": "零一二三四五六七八九十",
    "en": ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"],
}
_RETRY = {
    "zh": (
        "你的回答里只有{kept}个可用的改写{why}。请再写{missing}个新的改写，意思与原问题相同、说法与原问题及已有改写都不同。"
        "只输出{missing}行，每行一个改写，不要编号、引号或解释。\n原问题：{question}"
    ),
    "en": (
        "Your reply had only {kept} usable rewrite(s){why}. Write {missing} more: same meaning as the original, "
        "worded differently from it and from the ones already given. Output exactly {missing} lines, one rewrite "
        "per line, with no numbering, quotes or comments.\nQuestion: {question}"
    ),
}
_RETRY_WHY = {
    "zh": {"refusal": "（这只是改写措辞，不需要回答问题，也不涉及图片以外的内容）", "": ""},
    "en": {"refusal": " (this only asks for rewording, not for an answer)", "": ""},
}


def language_of(language: str) -> str:
    return language if language in LANGUAGES else "en"


def count_in_words(n: int, language: str) -> str:
    words = _NUMBER_WORDS[language_of(language)]
    return words[n] if 0 <= n < len(words) else str(n)


def options_text(choices, language: str) -> str:
    if not choices:
        return ""
    lines = "\n".join(f"{'ABCD'[i]}. {choice}" for i, choice in enumerate(choices[:4]))
    return _OPTIONS_INTRO[language_of(language)].format(lines=lines)


def render(template: str, *, question: str, n: int, language: str = "zh", choices=()) -> str:
    values = {
        "question": question.strip(),
        "n": str(n),
        "count": count_in_words(n, language),
        "options": options_text(choices, language),
    }
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def template_problems(text: str) -> list[str]:
    """What makes a template unusable (it must at least contain the question)."""
    problems = []
    if "{question}" not in text:
        problems.append(gettext("The template must contain {question}, where the seed question goes."))
    if len(text) > 8000:
        problems.append(gettext("The template is longer than 8,000 characters."))
    return problems


def first_messages(template: str, *, question: str, n: int, language: str, choices=()) -> list[dict]:
    return [{"role": "user", "content": render(template, question=question, n=n, language=language, choices=choices)}]


def retry_messages(
    first: list[dict], reply: str, *, question: str, kept: int, missing: int, language: str, refusal: bool
) -> list[dict]:
    """The first request and reply, then a message saying what was wrong and asking for the rest."""
    lang = language_of(language)
    correction = _RETRY[lang].format(
        kept=kept, missing=missing, question=question.strip(), why=_RETRY_WHY[lang]["refusal" if refusal else ""]
    )
    return [*first, {"role": "assistant", "content": reply}, {"role": "user", "content": correction}]
