"""The demo provider: an offline, deterministic stand-in for a model, so every stage can be tried
without a key (provider = "demo" in a models file; never chosen unless a file names it).

It reads the request the way a model would have to: it recognises the harness's and the
platform's prompts by their wording (rewrite a question, pick an option, say which option a reply
chose, grade an answer, compare two answers, score two assistants, rate hallucination) and answers
in the format each asks for. Anything else is an open question, answered in the question's
language and labelled as demo output. The same request always gets the same reply.

Quality varies with the endpoint's model name: one containing "strong" answers carefully, "weak"
poorly (always option A, short answers), anything else in between. The demo judge grades a demo
answer by the quality it was written at, and anything else by its overlap with the reference, so
a leaderboard of demo models ranks them strong > fair > weak. Nothing here knows an answer key.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from .endpoints import Endpoint
from .providers import ChatResponse, _EmptyReply, _Failure

DEMO_LABEL = "[demo output]"
DEMO_LABEL_ZH = "【演示输出】"
QUALITIES = ("weak", "fair", "strong")
_QUALITY_MARK = re.compile(r"[(（](?:quality|质量) (weak|fair|strong)[)）]")
_OPTION = re.compile(r"^\s*([A-Z])[.．、:：)]\s*(.+?)\s*$", re.MULTILINE)
_CJK = re.compile(r"[\u4e00-\u9fff]")
_WORD = re.compile(r"[A-Za-z0-9]+|[\u4e00-\u9fff]")


def quality_of(model: str) -> str:
    name = model.lower()
    return "strong" if "strong" in name else "weak" if "weak" in name else "fair"


def _text(messages: list[dict]) -> tuple[str, str]:
    """(the last user message's text, every earlier message's text)."""
    parts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append((message.get("role"), content))
        elif isinstance(content, list):
            texts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
            parts.append((message.get("role"), "\n".join(texts)))
    last = next((text for role, text in reversed(parts) if role == "user"), parts[-1][1] if parts else "")
    return last, "\n".join(text for _, text in parts)


def _number(key: str, spread: int) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % spread


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _overlap(a: str, b: str) -> float:
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / max(1, len(wa | wb)) if wa and wb else 0.0


def _between(text: str, start: str, ends: tuple[str, ...]) -> str:
    at = text.find(start)
    if at < 0:
        return ""
    rest = text[at + len(start) :]
    cut = min((rest.find(end) for end in ends if end in rest), default=len(rest))
    return rest[:cut].strip()


class DemoClient:
    """What LLMClient needs of a provider adapter (send, classify, close), with no network."""

    def __init__(self, endpoint: Endpoint, api_key: str = ""):
        self.endpoint = endpoint
        self.quality = quality_of(endpoint.model)

    # -- the adapter protocol

    def send(self, messages: list[dict], params: dict) -> ChatResponse:
        prompt, everything = _text(messages)
        reply = self.reply(prompt, everything)
        if not reply.strip():
            raise _EmptyReply("stop")
        prompt_tokens = len(everything.split()) + len(_CJK.findall(everything))
        completion = len(reply.split()) + len(_CJK.findall(reply))
        return ChatResponse(
            text=reply,
            usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion, "total_tokens": prompt_tokens + completion},
            cached=False,
            finish_reason="stop",
            endpoint=self.endpoint.name,
            model=self.endpoint.model,
        )

    def classify(self, exc: BaseException) -> _Failure:
        return _Failure(f"the demo provider failed: {type(exc).__name__}: {exc}", "this is a bug in the demo provider", False)

    def close(self) -> None:
        pass

    # -- replies

    def reply(self, prompt: str, everything: str) -> str:
        zh = bool(_CJK.search(prompt))
        if "[Answer1]" in prompt:
            return self.pairwise(prompt, zh)
        if "[Assistant 2]" in prompt or "[助手2]" in prompt:
            return self.touchstone(prompt)
        if '"rating"' in prompt:
            return self.pointwise(prompt, zh)
        if '"score"' in prompt:
            return json.dumps({"score": _number(prompt, 4), "reason": "demo judge: a rough guess"}, ensure_ascii=False)
        if re.search(r"\b(?:Write a single character|give Z)\b|给出 Z", prompt):
            return self.extract(prompt)
        if re.search(r"rewrite|改写", prompt, re.IGNORECASE) and re.search(r"Question:|原问题：", prompt):
            return self.rewrite(prompt, zh)
        options = dict(_OPTION.findall(prompt))
        if len(options) >= 2 and re.search(r"letter|字母", prompt, re.IGNORECASE):
            return self.choose(prompt, options)
        return self.answer(prompt, zh)

    def choose(self, prompt: str, options: dict[str, str]) -> str:
        """An option letter. Strong: the option sharing most words with the question (the same
        option whatever order it is shown in); fair: that, but a guess one time in eight; weak:
        position bias, always the first option."""
        letters = sorted(options)
        if self.quality == "weak":
            return letters[0]
        question = _OPTION.sub("", prompt)
        ranked = sorted(letters, key=lambda k: (-_overlap(question, options[k]), _number(options[k], 997)))
        if self.quality == "fair" and _number(self.endpoint.model + prompt, 8) == 0:
            return letters[_number(prompt, len(letters))]
        return ranked[0]

    def extract(self, prompt: str) -> str:
        reply = _between(prompt, '"""', ('"""',))
        options = dict(_OPTION.findall(prompt.split('"""')[0]))
        match = re.search(r"\b(?:answer is|option|choose|答案是|选)\s*([A-Z])\b", reply, re.IGNORECASE)
        if match and match.group(1).upper() in options:
            return match.group(1).upper()
        bare = re.fullmatch(r"\s*\(?([A-Z])\)?[.。]?\s*", reply)
        if bare and bare.group(1) in options:
            return bare.group(1)
        named = [letter for letter, text in options.items() if text and text.lower() in reply.lower()]
        return named[0] if len(named) == 1 else "Z"

    def rewrite(self, prompt: str, zh: bool) -> str:
        question = (re.split(r"Question:|原问题：", prompt)[-1]).strip().splitlines()[0].strip()
        wanted = re.search(r"(?:exactly|Write|只输出|再写)\s*(\d+)", prompt)
        n = int(wanted.group(1)) if wanted else 5
        core = question.rstrip("？?。.")
        if zh:
            forms = [
                f"请问{core}？",
                f"能告诉我{core}吗？",
                f"我想了解一下，{core}？",
                f"麻烦看一下图片：{core}？",
                f"{core}，你能看出来吗？",
            ]
            forms += [f"从图中判断，{core}？", f"劳驾说一下，{core}？", f"{core}呢？"]
        else:
            lower = core[0].lower() + core[1:] if core else core
            forms = [f"Could you tell me: {lower}?", f"Looking at the image, {lower}?", f"I'd like to know: {lower}?"]
            forms += [
                f"Quick question: {lower}?",
                f"From the picture, {lower}?",
                f"Please say: {lower}?",
                f"Can you see {lower}?",
            ]
        start = _number(self.endpoint.model + question, len(forms))
        picked = [forms[(start + i) % len(forms)] for i in range(min(n, len(forms)))]
        if self.quality == "weak" and picked:
            picked[-1] = question  # a copy of the seed: verification drops it
        return "\n".join(picked)

    def answer(self, prompt: str, zh: bool) -> str:
        question = prompt.strip().splitlines()[-1][:200] if prompt.strip() else ""
        if zh:
            body = {
                "strong": f"仔细看图后回答“{question}”：图中主体清晰可辨，答案依据画面中最显眼的部分给出，并说明了判断理由。",
                "fair": f"关于“{question}”：从画面看大致可以判断，但有些细节不太确定。",
                "weak": "看不太清楚。",
            }[self.quality]
            return f"{DEMO_LABEL_ZH}（质量 {self.quality}）{body}"
        body = {
            "strong": f'On "{question}": looking closely at the image, the answer follows from its most prominent part, '
            "and here is the reasoning step by step: the main subject is clear and matches the question.",
            "fair": f'On "{question}": roughly, from what the picture shows, though some details are uncertain.',
            "weak": "Hard to say.",
        }[self.quality]
        return f"{DEMO_LABEL} (quality {self.quality}) {body}"

    @staticmethod
    def _grade(answer: str, reference: str) -> int:
        mark = _QUALITY_MARK.search(answer)
        if mark:
            return {"weak": 3, "fair": 6, "strong": 9}[mark.group(1)] + (_number(answer, 3) - 1) * (mark.group(1) != "strong")
        return max(1, min(10, 2 + round(8 * _overlap(answer, reference))))

    def pointwise(self, prompt: str, zh: bool) -> str:
        answer = _between(prompt, "[Assistant's answer]", ("\nReply with",)) or _between(prompt, "[助手的回答]", ("\n只回复",))
        reference = _between(prompt, "[Reference answer]", ("[Assistant's answer]",)) or _between(
            prompt, "[参考答案]", ("[助手的回答]",)
        )
        rating = self._grade(answer, reference)
        reason = f"演示评审：打分 {rating}。" if zh else f"demo judge: graded {rating} against the reference."
        return json.dumps({"rating": rating, "reason": reason}, ensure_ascii=False)

    def pairwise(self, prompt: str, zh: bool) -> str:
        one = _between(prompt, "[Answer1]", ("[End of Answer1]",))
        two = _between(prompt, "[Answer2]", ("[End of Answer2]",))
        a, b = self._grade(one, ""), self._grade(two, "")
        verdict = "Answer1" if a > b else "Answer2" if b > a else "unable to decide: situation one"
        why = (
            f"演示评审：回答1 约 {a} 分，回答2 约 {b} 分。" if zh else f"Demo judge: Answer1 rates about {a}, Answer2 about {b}."
        )
        return f"{why}\n{verdict}"

    def touchstone(self, prompt: str) -> str:
        one = _between(prompt, "[Assistant 1]", ("[End of Assistant 1]",))
        two = _between(prompt, "[Assistant 2]", ("[End of Assistant 2]",))
        return f"{self._grade(one, '')} {self._grade(two, '')}\nDemo judge: scores by the answers' care."


def demo_client(endpoint: Endpoint, api_key: str = "") -> Any:
    return DemoClient(endpoint, api_key)
