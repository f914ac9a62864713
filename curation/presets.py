"""Taxonomy presets of the benchmarks benchforge follows (docs/methods.md section 8).

Descriptions, keywords, guidelines and judge rules are our own wording. A preset is plain
data; `curation.services.load_preset` turns it into rows and can be re-run safely.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TaskSpec:
    name: str  # in the preset's language; the *_en texts are its English, for the English interface
    description: str = ""
    keywords: tuple[str, ...] = ()
    guideline: str = ""
    judge_rules: str = ""
    quota: int | None = None
    name_en: str = ""
    description_en: str = ""
    guideline_en: str = ""
    judge_rules_en: str = ""
    keywords_en: tuple[str, ...] = ()

    def in_english(self) -> "TaskSpec":
        """The task with its English texts as its own (for a benchmark in English); itself if it has none."""
        if not self.name_en:
            return self
        return TaskSpec(
            name=self.name_en,
            description=self.description_en or self.description,
            keywords=self.keywords_en or self.keywords,
            guideline=self.guideline_en or self.guideline,
            judge_rules=self.judge_rules_en or self.judge_rules,
            quota=self.quota,
        )


@dataclass(frozen=True)
class CategorySpec:
    name: str
    description: str = ""
    tasks: tuple[TaskSpec, ...] = ()
    children: tuple["CategorySpec", ...] = ()
    name_en: str = ""
    description_en: str = ""

    def in_english(self) -> "CategorySpec":
        if not self.name_en:
            return self
        tasks = tuple(t.in_english() for t in self.tasks)
        return CategorySpec(
            self.name_en, self.description_en or self.description, tasks, tuple(c.in_english() for c in self.children)
        )


@dataclass(frozen=True)
class Preset:
    key: str
    name: str
    description: str
    default_quota: int
    categories: tuple[CategorySpec, ...] = field(default_factory=tuple)
    language: str = "en"  # of the questions a benchmark made from it (harness.LANGUAGES)

    def iter_tasks(self):
        def walk(cats):
            for cat in cats:
                yield from cat.tasks
                yield from walk(cat.children)

        return walk(self.categories)


def _t(name, description="", keywords=(), guideline="", judge_rules="", quota=None):
    return TaskSpec(name, description, tuple(keywords), guideline, judge_rules, quota)


def _zh(name, name_en, description, keywords, guideline, judge_rules=""):
    """A task of a Chinese preset: (Chinese, English) pairs of each text and of the keywords."""
    return TaskSpec(
        name=name,
        name_en=name_en,
        description=description[0],
        description_en=description[1],
        keywords=tuple(keywords[0]),
        keywords_en=tuple(keywords[1]),
        guideline=guideline[0],
        guideline_en=guideline[1],
        judge_rules=judge_rules[0] if judge_rules else "",
        judge_rules_en=judge_rules[1] if judge_rules else "",
    )


# AlignMMBench is a Chinese benchmark: its tasks, guidelines and judge rules are Chinese (what its
# annotators read and its judge is given), with the paper's English task names as aliases. The
# English names are also what the released metadata.jsonl calls the tasks, so imports match them.
ALIGNMMBENCH = Preset(
    key="alignmmbench",
    name="AlignMMBench",
    description="Chinese multimodal alignment: 13 tasks in three groups, seed questions expanded by LLM rewrites.",
    default_quota=80,
    language="zh",
    categories=(
        CategorySpec(
            "感知与理解",
            "看清图中有什么，并解释它。",
            name_en="Perception & Understanding",
            description_en="Seeing what is in the image and explaining it.",
            tasks=(
                _zh(
                    "描述",
                    "Description",
                    ("完整描述一张图片：物体、场景、氛围和文字。", "Describe an image in full: objects, scene, mood, text."),
                    (["海报", "风景", "流程图", "地图", "漫画"], ["poster", "scenery", "flowchart", "map", "cartoon"]),
                    (
                        "请模型描述图片；参考答案要写出评委不看图也需要知道的每一个可见元素。",
                        "Ask for a description; the reference must cover every visible element a judge would need.",
                    ),
                ),
                _zh(
                    "识别",
                    "Recognition",
                    ("说出物体、物种、地点、人物或品牌。", "Name objects, species, places, people or brands."),
                    (["动物", "植物", "地标", "商标"], ["animals", "plants", "landmarks", "logos"]),
                    (
                        "问图中某物是什么；参考答案准确说出它的名称，并说明凭什么认出它。",
                        "Ask what something is; the reference names it precisely and says how it can be told apart.",
                    ),
                ),
                _zh(
                    "计数",
                    "Counting",
                    ("数出图中某类事物的数量。", "Count instances of something in the image."),
                    (["水果摊", "收藏品", "人群"], ["fruit stall", "collections", "crowds"]),
                    (
                        "只问能数清楚的东西；参考答案给出确切数字。",
                        "Ask for a count of clearly countable things; the reference gives the exact number.",
                    ),
                    (
                        "数量与参考答案不同即为错误，其余部分写得再好也一样。",
                        "Any number other than the reference count is wrong, however good the rest of the answer is.",
                    ),
                ),
                _zh(
                    "OCR",
                    "OCR",
                    ("读取、提取或利用图中的文字。", "Read, extract or use text in the image."),
                    (["招牌", "菜单", "小票", "手写"], ["signs", "menus", "receipts", "handwriting"]),
                    (
                        "请模型读出或使用图中文字；参考答案逐字照录原文。",
                        "Ask to read or use text; the reference transcribes it exactly.",
                    ),
                    (
                        "提取的文字必须与参考答案一致；忠实地译成另一种语言不算错误。",
                        "Extracted text must match the reference; a faithful translation into another language is not an error.",
                    ),
                ),
                _zh(
                    "梗图理解",
                    "Meme",
                    ("解释梗图或幽默图片。", "Explain a meme or humorous image."),
                    (["梗图", "漫画", "表情包"], ["memes", "comics", "stickers"]),
                    (
                        "问这张图好笑在哪里；参考答案讲清笑点和需要的文化背景。",
                        "Ask why the image is funny; the reference explains the joke and its cultural background.",
                    ),
                    (
                        "只有讲出图片为什么好笑的回答才得分，只描述画面内容的不算。",
                        "Credit the answer only if it explains why the image is funny, not just what it shows.",
                    ),
                ),
                _zh(
                    "知识",
                    "Knowledge",
                    ("用图片所需的常识和世界知识作答。", "Answer with world knowledge the image calls for."),
                    (["艺术品", "名胜古迹", "乐器"], ["artworks", "historic sites", "instruments"]),
                    (
                        "提出需要画面以外知识才能回答的问题；参考答案写明相关事实。",
                        "Ask a question that needs knowledge beyond the pixels; the reference states the facts.",
                    ),
                ),
            ),
        ),
        CategorySpec(
            "推理与分析",
            "根据图片得出结论、生成内容。",
            name_en="Reasoning & Analysis",
            description_en="Drawing conclusions and producing content from the image.",
            tasks=(
                _zh(
                    "推理",
                    "Reasoning",
                    ("推断图中没有直接呈现的信息。", "Infer something not directly visible."),
                    (["谜题", "带线索的场景", "因果关系"], ["puzzles", "scenes with clues", "cause and effect"]),
                    (
                        "请模型做出推断；参考答案给出结论和推理过程。",
                        "Ask for an inference; the reference gives the conclusion and the reasoning.",
                    ),
                    (
                        "先看最终结论：结论错误时，推理过程再好也不能给高分。",
                        "Judge the final conclusion first; a wrong conclusion caps the rating whatever the reasoning.",
                    ),
                ),
                _zh(
                    "图表",
                    "Chart",
                    ("读懂并分析图表和表格。", "Read and analyse charts and tables."),
                    (["地铁线路图", "柱状图", "表格", "折线图"], ["subway map", "bar graph", "table", "line chart"]),
                    (
                        "问图表中的数值、趋势或比较；参考答案给出确切数值。",
                        "Ask about values, trends or comparisons in the chart; the reference gives the exact values.",
                    ),
                ),
                _zh(
                    "问题解答",
                    "Problem",
                    ("解答图中给出的题目（数学、物理、代码）。", "Solve a problem shown in the image (maths, physics, code)."),
                    (["试题", "示意图", "代码截图"], ["exam questions", "diagrams", "code screenshots"]),
                    ("请模型解题；参考答案写出步骤和结果。", "Ask to solve it; the reference shows the steps and the result."),
                ),
                _zh(
                    "对比",
                    "Comparison",
                    ("比较图中的物体或区域。", "Compare objects or regions of the image."),
                    (["商品货架", "前后对比", "两种动物"], ["product shelves", "before and after", "two animals"]),
                    (
                        "请模型做比较；参考答案列出不同点和相同点。",
                        "Ask for a comparison; the reference lists the differences and similarities.",
                    ),
                ),
                _zh(
                    "写作",
                    "Writing",
                    ("根据图片写创意或实用文字。", "Write creative or practical text inspired by the image."),
                    (["风景", "活动", "产品"], ["landscapes", "events", "products"]),
                    (
                        "请模型就图片写一首诗、一个故事、一则广告或一封邮件；参考答案是一个好的范例。",
                        "Ask for a poem, story, ad or email about the image; the reference is one good example.",
                    ),
                    (
                        "故事或诗歌看是否通顺、是否切合图片和要求，而不看与参考答案是否相近。",
                        "Judge a story or poem on fluency and relevance to the image and request, not closeness to the reference.",
                    ),
                ),
            ),
        ),
        CategorySpec(
            "对话上下文",
            "取自真实使用的多轮对话，不做改写。",
            name_en="Dialogue Context",
            description_en="Multi-turn dialogues taken from real use; never rewritten.",
            tasks=(
                _zh(
                    "对话连贯性",
                    "Coherence",
                    ("结合前几轮对话作答。", "Answer using earlier turns of the dialogue."),
                    (["多轮对话记录"], ["multi-turn logs"]),
                    (
                        "保留真实的对话历史；最后一个问题要依赖前文才能回答。",
                        "Keep the real dialogue history; the final question depends on it.",
                    ),
                    (
                        "检查回答是否用到了对话历史，并遵守了前几轮提出的要求。",
                        "Check the answer uses the dialogue history and follows instructions given in earlier turns.",
                    ),
                ),
                _zh(
                    "对话纠错",
                    "Incoherence",
                    ("前一轮助手回答有误，用户指了出来。", "An earlier assistant turn was wrong and the user says so."),
                    (["多轮对话记录"], ["multi-turn logs"]),
                    (
                        "对话历史中有一轮错误的助手回答，用户指出了错误；参考答案给出更正。",
                        "The history holds a wrong assistant turn that the user points out; the reference corrects it.",
                    ),
                    (
                        "检查回答是否发现了之前的错误并加以更正，而不是重复错误。",
                        "Check the answer notices the earlier mistake and corrects it instead of repeating it.",
                    ),
                ),
            ),
        ),
    ),
)


# Shared rules of each method, added to every task's guideline or judging text below.
MLLM_GUIDE = (
    " Give each question one to three criteria (exact reference, soft reference, range or an evaluation"
    " guideline) so a judge can tell a better answer from a worse one. Use recent, license-friendly images"
    " with a short edge of at least 512 px, and nothing geopolitically sensitive."
)
MMBENCH_GUIDE = (
    " Multiple choice: two to four options, exactly one right; the wrong ones plausible but ruled out by the"
    " image. The question must need the image: the text-only filter flags items a model answers without it."
)
TOUCHSTONE_GUIDE = (
    " Write a fine-grained description of the image (every object, text and detail that matters): the judge"
    " reads it instead of the image, and it also measures hallucination."
)


def _mllm(name, description, keywords, guideline, judge_rules=""):
    return _t(name, description, keywords, guideline + MLLM_GUIDE, judge_rules)


def _mcq(name, description, keywords, guideline):
    # Multiple choice is scored by CircularEval, not by a judge: no judging text.
    return _t(name, description, keywords, guideline + MMBENCH_GUIDE)


def _touchstone(name, description, keywords, guideline, judge_rules=""):
    return _t(name, description, keywords, guideline + TOUCHSTONE_GUIDE, judge_rules)


COUNT_RULE = "Any number other than the reference count is wrong, however good the rest of the answer is."
TEXT_RULE = "Text read from the image must match the reference; a faithful translation into another language is not an error."
CONCLUSION_RULE = "Judge the final conclusion first: a wrong conclusion caps the rating whatever the reasoning."
WRITING_RULE = "Judge the writing on fluency and fit to the image and the request, not on closeness to the reference."
JOKE_RULE = "Credit the answer only if it explains why the image is funny, not just what it shows."


MLLM_BENCH = Preset(
    key="mllm-bench",
    name="MLLM-Bench",
    description="Six cognitive levels, 42 capabilities, 10 questions each, judged pairwise with per-sample criteria.",
    default_quota=10,
    # Level and capability names follow the released questions file so imports map one to one.
    categories=(
        CategorySpec(
            "Perception/Remembering",
            "Recognising what is there.",
            tasks=(
                _mllm(
                    "General Object Recognition",
                    "Name the everyday objects, animals and things in an image.",
                    ["household items", "street scenes", "animals", "tools"],
                    "Ask what a clearly visible object is; the criteria name it exactly and allow common synonyms.",
                ),
                _mllm(
                    "OCR",
                    "Read printed or handwritten text in an image.",
                    ["signs", "receipts", "book pages", "screenshots"],
                    "Ask for text that is legible at full size; an exact-reference criterion quotes it.",
                    TEXT_RULE,
                ),
                _mllm(
                    "Multilingual Text Recognition",
                    "Read text written in another language than the question, or in several languages.",
                    ["bilingual signs", "foreign menus", "product labels"],
                    "Ask to read or translate the text; the criteria give the original and, if asked, its meaning.",
                    "The original text must be reproduced exactly; judge a requested translation on its meaning.",
                ),
                _mllm(
                    "Action Recognition",
                    "Say what the people or animals in an image are doing.",
                    ["sports", "cooking", "street life", "pets"],
                    "Ask about an action a still image shows without doubt; the criteria name the action and who does it.",
                ),
                _mllm(
                    "Symbol Recognition",
                    "Identify symbols, icons, logos and signs, and what they mean.",
                    ["traffic signs", "app icons", "warning labels", "logos"],
                    "Ask what a symbol means where it is used; the criteria state that meaning.",
                ),
                _mllm(
                    "Food Recognition",
                    "Name dishes, ingredients and drinks.",
                    ["restaurant dishes", "market stalls", "home cooking"],
                    "Ask what a dish or ingredient is; the criteria name it and the cues that give it away.",
                ),
                _mllm(
                    "Landmark Recognition",
                    "Name well-known buildings, monuments and places.",
                    ["monuments", "skylines", "tourist photos"],
                    "Choose landmarks that the picture alone identifies; the criteria name the place and where it is.",
                ),
            ),
        ),
        CategorySpec(
            "Understanding",
            "Interpreting a scene and its meaning.",
            tasks=(
                _mllm(
                    "Scene Understanding",
                    "Explain where a scene takes place and what is going on in it.",
                    ["streets", "offices", "festivals", "sports events"],
                    "Ask about the setting, the people and what they do; the criteria cover all three.",
                ),
                _mllm(
                    "Attribute Recognition",
                    "Report the colour, shape, material, size or state of something shown.",
                    ["clothing", "vehicles", "furniture", "products"],
                    "Ask about one visible property; the criteria state it precisely.",
                ),
                _mllm(
                    "Image Topic Understanding",
                    "Say what an image is about as a whole: its theme or purpose.",
                    ["posters", "magazine covers", "infographics", "adverts"],
                    "Ask for the topic or message; the criteria state it in a sentence or two.",
                ),
                _mllm(
                    "Hidden Objects Recognition",
                    "Find objects that are small, partly covered or camouflaged.",
                    ["camouflage", "crowded shelves", "hidden-object puzzles"],
                    "Ask whether or where something is hidden; an exact-reference criterion gives its position.",
                ),
                _mllm(
                    "Facial Expression Recognition",
                    "Read the expression on a face.",
                    ["portraits", "crowd reactions", "film stills"],
                    "Ask about clear expressions only; the criteria name the expression and the visible cues.",
                ),
                _mllm(
                    "Emotion Understanding",
                    "Infer the feelings an image shows or is meant to stir.",
                    ["family photos", "news photos", "artworks"],
                    "Ask about a mood that visible evidence supports; soft-reference criteria allow close synonyms.",
                ),
                _mllm(
                    "Multimodal Commonsense Understanding",
                    "Answer with the everyday common sense a picture calls for.",
                    ["kitchens", "traffic", "safety hazards", "daily routines"],
                    "Ask what a person would answer from experience; the criteria say what the answer must consider.",
                ),
                _mllm(
                    "Joke and Meme Understanding",
                    "Explain why a meme, comic or joke is funny.",
                    ["memes", "comics", "satirical cartoons"],
                    "Ask for the joke; the criteria name what makes it funny, with any cultural background it needs.",
                    JOKE_RULE,
                ),
                _mllm(
                    "Multilingual Multicultural Understanding",
                    "Understand customs, festivals and cultural references from different places.",
                    ["festivals", "traditional dress", "rituals", "regional food"],
                    "Ask about the cultural meaning of what is shown; the criteria name the culture and the custom.",
                ),
                _mllm(
                    "Document Understanding",
                    "Find information in forms, letters, pages and screenshots.",
                    ["forms", "invoices", "web pages", "letters"],
                    "Ask for something that must be looked up in the document; the criteria quote where it is.",
                ),
                _mllm(
                    "Table Understanding",
                    "Read values from tables and compare rows or columns.",
                    ["timetables", "price lists", "spreadsheets"],
                    "Ask for values or comparisons; exact-reference criteria give the numbers.",
                ),
            ),
        ),
        CategorySpec(
            "Applying",
            "Using what is seen to carry out a task.",
            tasks=(
                _mllm(
                    "Object Localization",
                    "Say where an object is in the image.",
                    ["shelves", "rooms", "aerial photos", "grids"],
                    "Ask for a position that can be stated plainly (row and column, left or right of something);"
                    " an exact-reference criterion gives it.",
                    "The position must match the reference; a vaguer position that is still right is only partly right.",
                ),
                _mllm(
                    "Object Counting",
                    "Count how many of something the image shows.",
                    ["fruit stalls", "crowds", "parking lots", "collections"],
                    "Ask for a count of clearly countable things; an exact-reference criterion gives the number.",
                    COUNT_RULE,
                ),
                _mllm(
                    "Spatial Relationship Understanding",
                    "Describe how objects are placed relative to each other.",
                    ["rooms", "tabletop scenes", "maps"],
                    "Ask about above, below, in front of or between; the criteria state the relation as the viewer sees it.",
                ),
                _mllm(
                    "Medical Image Understanding",
                    "Describe what a medical image shows, at a general level.",
                    ["X-rays", "scans", "microscope slides", "first aid"],
                    "Use anonymised images with a clear license; the criteria describe what is visible and never diagnose"
                    " a real person.",
                ),
                _mllm(
                    "Image Captioning",
                    "Write a short caption for an image.",
                    ["everyday photos", "news photos", "landscapes"],
                    "Ask for a one-sentence caption; the criteria name the main subject and what happens.",
                ),
                _mllm(
                    "Dense Captioning",
                    "Describe many regions of a busy image in detail.",
                    ["busy streets", "markets", "cluttered rooms"],
                    "Ask for a description of every part of the image; the criteria list the regions it must cover.",
                ),
            ),
        ),
        CategorySpec(
            "Analyzing",
            "Relating parts and reasoning about them.",
            tasks=(
                _mllm(
                    "Natural Relationship Understanding",
                    "Explain relations in nature: food chains, habitats, growth.",
                    ["wildlife", "plants", "ecosystems"],
                    "Ask how the living things or natural elements shown relate; the criteria state the relation.",
                ),
                _mllm(
                    "Chart Understanding",
                    "Read and interpret charts.",
                    ["bar graphs", "line charts", "pie charts", "dashboards"],
                    "Ask about values, trends or comparisons; exact-reference criteria give the values read off the chart.",
                ),
                _mllm(
                    "Attribute Comparison",
                    "Compare a property of two or more things shown.",
                    ["product shelves", "before and after", "two animals"],
                    "Ask which is bigger, older, brighter and so on; the criteria name it and the evidence.",
                ),
                _mllm(
                    "Difference Finding",
                    "Find what differs between two similar images or regions.",
                    ["spot the difference", "before and after", "design versions"],
                    "Ask for every difference; the criteria list each one.",
                ),
                _mllm(
                    "Event Cause Reasoning",
                    "Explain what most likely caused what the image shows.",
                    ["accidents", "storm damage", "spills", "news photos"],
                    "Ask why something happened; the criteria give the most plausible cause and the evidence for it.",
                    CONCLUSION_RULE,
                ),
                _mllm(
                    "Social Relation Reasoning",
                    "Infer how the people in an image are related.",
                    ["family photos", "workplaces", "teams", "ceremonies"],
                    "Ask about relations the picture supports; the criteria give the relation and the cues.",
                ),
                _mllm(
                    "Identity Reasoning",
                    "Infer the role or occupation of a person, or the kind of a thing, from cues.",
                    ["uniforms", "workplaces", "tools of a trade"],
                    "Ask what someone does, never who they are by name; the criteria name the role and the cues.",
                ),
                _mllm(
                    "Function Reasoning",
                    "Explain what an object or device is for and how it is used.",
                    ["tools", "gadgets", "kitchen utensils", "machines"],
                    "Ask how something is used; the criteria explain its purpose.",
                ),
                _mllm(
                    "Physical Property Reasoning",
                    "Reason about weight, material, temperature, balance or fragility.",
                    ["materials", "liquids", "structures", "sports equipment"],
                    "Ask a question that needs physical reasoning about what is shown; the criteria explain the answer.",
                    CONCLUSION_RULE,
                ),
                _mllm(
                    "Visual Math Reasoning",
                    "Solve maths shown in an image: geometry, equations, sums from a receipt.",
                    ["geometry diagrams", "worksheets", "receipts"],
                    "Ask for a result; the criteria give the exact result and the key steps.",
                    "The final result must match the reference; judge the result before the working.",
                ),
            ),
        ),
        CategorySpec(
            "Evaluating",
            "Judging quality, authenticity or ethics.",
            tasks=(
                _mllm(
                    "Image Quality Evaluation",
                    "Judge an image's sharpness, exposure, noise and composition.",
                    ["blurry photos", "over-exposed shots", "compressed images"],
                    "Ask what is good or bad about the quality; the criteria name each problem.",
                ),
                _mllm(
                    "Damage Evaluation",
                    "Assess damage to objects, vehicles or buildings.",
                    ["car accidents", "cracked walls", "broken goods"],
                    "Ask where the damage is and how serious; the criteria describe it.",
                ),
                _mllm(
                    "Fake Image Detection",
                    "Tell whether an image was edited or generated, and why.",
                    ["edited photos", "generated images", "composites"],
                    "Use images whose origin is known; the criteria state it and the visible clues.",
                ),
                _mllm(
                    "Ethical Problem Detection",
                    "Recognise unsafe, unfair or unethical behaviour in an image.",
                    ["safety violations", "littering", "dangerous behaviour"],
                    "Avoid offensive images; the criteria name the problem and why it matters.",
                ),
            ),
        ),
        CategorySpec(
            "Creating",
            "Producing new content or predictions.",
            tasks=(
                _mllm(
                    "Action Prediction",
                    "Predict what happens next in the scene.",
                    ["sports moments", "traffic", "cooking", "falling objects"],
                    "Ask what happens next; the criteria give the most likely outcome and why.",
                ),
                _mllm(
                    "Trend Prediction",
                    "Extend a trend shown by a chart or a sequence of pictures.",
                    ["line charts", "price charts", "growth series"],
                    "Ask what comes next; the criteria give a reasoned forecast or a range.",
                ),
                _mllm(
                    "Coding Capability with Vision",
                    "Write code from an image: a user interface, a chart, a diagram or code in a screenshot.",
                    ["UI mock-ups", "flowcharts", "code screenshots", "charts"],
                    "Ask for code that rebuilds or uses what is shown; the criteria say what the code must do.",
                    "Check that the code would do what the request and the image ask; the language and style matter less.",
                ),
                _mllm(
                    "Visual Storytelling",
                    "Write a story inspired by an image.",
                    ["illustrations", "landscapes", "family scenes"],
                    "Ask for a story; the reference is one good example, and the criteria say what the story must use.",
                    WRITING_RULE,
                ),
            ),
        ),
    ),
)


MMBENCH = Preset(
    key="mmbench",
    name="MMBench",
    description="Multiple-choice items in a three-level ability tree (20 leaves), scored with CircularEval.",
    default_quota=100,
    categories=(
        CategorySpec(
            "Perception",
            children=(
                CategorySpec(
                    "Coarse Perception",
                    tasks=(
                        _mcq(
                            "Image Style",
                            "Tell the style of an image: photograph, painting, sketch, cartoon, render.",
                            ["paintings", "sketches", "photos", "3D renders"],
                            "Offer styles that are clearly told apart.",
                        ),
                        _mcq(
                            "Image Scene",
                            "Name the kind of place an image shows.",
                            ["indoor scenes", "outdoor scenes", "landscapes"],
                            "Ask where the picture was taken; the options are kinds of place.",
                        ),
                        _mcq(
                            "Image Emotion",
                            "Pick the emotion an image conveys.",
                            ["portraits", "events", "artworks"],
                            "Use images whose mood is plain; the options are emotions.",
                        ),
                        _mcq(
                            "Image Quality",
                            "Judge blur, exposure, noise or colour of an image.",
                            ["degraded photos", "low-light shots", "compressed images"],
                            "Ask which quality problem the image has, or which of two is sharper.",
                        ),
                        _mcq(
                            "Image Topic",
                            "Pick what an image is about as a whole.",
                            ["posters", "news photos", "illustrations"],
                            "Ask for the subject; the options are topics.",
                        ),
                    ),
                ),
                CategorySpec(
                    "Fine-grained Single-instance Perception",
                    tasks=(
                        _mcq(
                            "Object Localization",
                            "Pick where an object is in the image.",
                            ["rooms", "street scenes", "shelves"],
                            "Ask for the position of one object; the options are positions.",
                        ),
                        _mcq(
                            "Attribute Recognition",
                            "Pick a visible property of one object: colour, shape, material.",
                            ["clothing", "vehicles", "products"],
                            "Ask about one property of one object.",
                        ),
                        _mcq(
                            "Celebrity Recognition",
                            "Name a well-known public figure in an image.",
                            ["public events", "film stills", "sports"],
                            "Only people famous in a public role, pictured in public.",
                        ),
                        _mcq(
                            "OCR",
                            "Read text in an image.",
                            ["signs", "labels", "documents"],
                            "Ask for a word or number legible in the image; the options differ in what it says.",
                        ),
                    ),
                ),
                CategorySpec(
                    "Fine-grained Cross-instance Perception",
                    tasks=(
                        _mcq(
                            "Spatial Relationship",
                            "Pick how two objects are placed relative to each other.",
                            ["rooms", "tabletop scenes", "street scenes"],
                            "Ask about left, right, above, below or in front; name both objects.",
                        ),
                        _mcq(
                            "Attribute Comparison",
                            "Compare a property of two objects.",
                            ["pairs of objects", "product shelves", "animals"],
                            "Ask which of two is larger, darker and so on.",
                        ),
                        _mcq(
                            "Action Recognition",
                            "Pick what the people in an image are doing together.",
                            ["sports", "group activities", "work scenes"],
                            "Ask about an action the still image shows without doubt.",
                        ),
                    ),
                ),
            ),
        ),
        CategorySpec(
            "Reasoning",
            children=(
                CategorySpec(
                    "Attribute Reasoning",
                    tasks=(
                        _mcq(
                            "Physical Property Reasoning",
                            "Reason about the physical properties of what is shown.",
                            ["materials", "liquids", "structures"],
                            "Ask something answered by weight, hardness, temperature or balance.",
                        ),
                        _mcq(
                            "Function Reasoning",
                            "Reason about what an object is for.",
                            ["tools", "appliances", "instruments"],
                            "Ask what the object is used for.",
                        ),
                        _mcq(
                            "Identity Reasoning",
                            "Infer what kind of person or thing is shown from cues.",
                            ["uniforms", "workplaces", "animals"],
                            "Ask for a role or kind, never a private person's name.",
                        ),
                    ),
                ),
                CategorySpec(
                    "Relation Reasoning",
                    tasks=(
                        _mcq(
                            "Social Relation",
                            "Infer how the people shown are related.",
                            ["family photos", "workplaces", "ceremonies"],
                            "Ask about a relation the picture supports.",
                        ),
                        _mcq(
                            "Physical Relation",
                            "Infer physical relations: support, contact, containment.",
                            ["stacked objects", "machines", "rooms"],
                            "Ask what holds, touches or contains what.",
                        ),
                        _mcq(
                            "Nature Relation",
                            "Infer relations in nature: food chains, habitats, life cycles.",
                            ["wildlife", "plants", "ecosystems"],
                            "Ask how the natural things shown relate.",
                        ),
                    ),
                ),
                CategorySpec(
                    "Logic Reasoning",
                    tasks=(
                        _mcq(
                            "Structuralized Image-Text Understanding",
                            "Reason over diagrams, tables, charts and text laid out together.",
                            ["diagrams", "tables", "charts", "flowcharts"],
                            "Ask something that needs reading the structure, not one label.",
                        ),
                        _mcq(
                            "Future Prediction",
                            "Predict what happens next from the scene.",
                            ["sports moments", "traffic", "weather"],
                            "Ask for the most likely next event.",
                        ),
                    ),
                ),
            ),
        ),
    ),
)


TOUCHSTONE = Preset(
    key="touchstone",
    name="TouchStone",
    description="Open dialogue abilities judged by a text-only LLM from fine-grained human image descriptions.",
    default_quota=34,
    categories=(
        CategorySpec(
            "Basic Description",
            tasks=(
                _touchstone(
                    "Simple Description",
                    "Describe an image briefly.",
                    ["everyday photos", "landscapes", "objects"],
                    "Ask for a short description of the main content.",
                ),
                _touchstone(
                    "Detailed Description",
                    "Describe an image in full detail.",
                    ["busy scenes", "rooms", "street views"],
                    "Ask for every detail worth mentioning.",
                    "Details in the answer that the human description does not contain count as hallucinations.",
                ),
            ),
        ),
        CategorySpec(
            "Visual Recognition",
            tasks=(
                _touchstone(
                    "Attribute QA",
                    "Answer questions about the properties of things shown.",
                    ["clothing", "vehicles", "products"],
                    "Ask about colour, size, material or state.",
                ),
                _touchstone(
                    "Movie/TV Recognition",
                    "Recognise a film or series from a still.",
                    ["film stills", "posters", "series scenes"],
                    "Use well-known works; the description names the work and the scene.",
                ),
                _touchstone(
                    "Art Recognition",
                    "Recognise artworks, their artists or schools.",
                    ["paintings", "sculptures", "prints"],
                    "Ask for the work, the artist or the style.",
                ),
                _touchstone(
                    "Landmark Recognition",
                    "Recognise famous buildings and places.",
                    ["monuments", "skylines", "historic sites"],
                    "Ask where the picture was taken.",
                ),
                _touchstone(
                    "Celebrity Recognition",
                    "Recognise well-known public figures.",
                    ["public events", "film stills", "sports"],
                    "Only people famous in a public role, pictured in public.",
                ),
                _touchstone(
                    "Emotion Recognition",
                    "Recognise the emotions of people in an image.",
                    ["portraits", "crowds", "film stills"],
                    "Ask about clear expressions.",
                ),
                _touchstone(
                    "Text Recognition",
                    "Read text in an image.",
                    ["signs", "menus", "documents", "screenshots"],
                    "Ask to read or use the text; the description transcribes it exactly.",
                    TEXT_RULE,
                ),
                _touchstone(
                    "Object Recognition",
                    "Recognise the objects in an image.",
                    ["household items", "tools", "animals"],
                    "Ask what things are.",
                ),
                _touchstone(
                    "Structured Content Recognition",
                    "Read tables, forms, charts and other structured content.",
                    ["tables", "forms", "receipts", "charts"],
                    "Ask for values; the description copies the structure with its numbers.",
                ),
            ),
        ),
        CategorySpec(
            "Visual Comprehension",
            tasks=(
                _touchstone(
                    "Style Appreciation",
                    "Discuss the style and aesthetics of an image.",
                    ["photography", "paintings", "design"],
                    "Ask what makes the style work; the description names style, composition and colour.",
                ),
                _touchstone(
                    "Abstract Image Understanding",
                    "Interpret abstract or symbolic images.",
                    ["abstract art", "symbols", "conceptual illustrations"],
                    "Ask what the image may mean.",
                ),
                _touchstone(
                    "Meme Understanding",
                    "Explain memes and humorous images.",
                    ["memes", "comics", "stickers"],
                    "Ask why it is funny; the description includes its text and context.",
                    JOKE_RULE,
                ),
                _touchstone(
                    "Image Analysis",
                    "Analyse what an image shows and implies.",
                    ["news photos", "scenes with clues", "adverts"],
                    "Ask for an analysis beyond a description.",
                ),
                _touchstone(
                    "Chart Analysis",
                    "Analyse charts: values, trends, conclusions.",
                    ["bar charts", "line charts", "pie charts"],
                    "Ask for values and what they mean; the description gives the chart's numbers.",
                ),
                _touchstone(
                    "General Problem Solving",
                    "Solve a problem the image poses.",
                    ["exam questions", "diagrams", "code screenshots"],
                    "Ask to solve it; the description copies the problem completely.",
                    CONCLUSION_RULE,
                ),
                _touchstone(
                    "Reasoning QA",
                    "Answer questions that need reasoning about the image.",
                    ["puzzles", "scenes with clues", "cause and effect"],
                    "Ask for a conclusion with reasons.",
                    CONCLUSION_RULE,
                ),
            ),
        ),
        CategorySpec(
            "Visual Storytelling",
            tasks=(
                _touchstone(
                    "Email Writing",
                    "Write an email prompted by an image.",
                    ["events", "products", "places"],
                    "Ask for an email with a purpose and a reader.",
                    WRITING_RULE,
                ),
                _touchstone(
                    "Poetry Writing",
                    "Write a poem inspired by an image.",
                    ["landscapes", "seasons", "city scenes"],
                    "Ask for a poem, naming a form if it matters.",
                    WRITING_RULE,
                ),
                _touchstone(
                    "Story Writing",
                    "Write a story inspired by an image.",
                    ["illustrations", "family scenes", "landscapes"],
                    "Ask for a story built on what the image shows.",
                    WRITING_RULE,
                ),
                _touchstone(
                    "Ads/Commodity Recommendation",
                    "Write an advert or recommendation for a product shown.",
                    ["products", "packaging", "shop windows"],
                    "Ask for copy that uses the product's visible features.",
                    WRITING_RULE,
                ),
                _touchstone(
                    "Brainstorming",
                    "Come up with ideas prompted by an image.",
                    ["rooms", "events", "objects"],
                    "Ask for several ideas that use the picture.",
                    WRITING_RULE,
                ),
            ),
        ),
        CategorySpec(
            "Multi-image Analysis",
            tasks=(
                _touchstone(
                    "Compare Images",
                    "Compare two or more images.",
                    ["photo pairs", "before and after", "design versions"],
                    "Ask for similarities and differences; describe every image.",
                ),
                _touchstone(
                    "Summarize Images",
                    "Summarise what a set of images shows together.",
                    ["photo series", "event photos", "comic strips"],
                    "Ask for one summary of all the images.",
                ),
                _touchstone(
                    "Compare Commodities",
                    "Compare products shown in several images.",
                    ["product photos", "price tags", "spec sheets"],
                    "Ask which to choose and why; describe each product.",
                ),
                _touchstone(
                    "Step-by-step Analysis",
                    "Explain a process shown across several images.",
                    ["recipes", "assembly steps", "tutorials"],
                    "Ask what happens at each step and in what order.",
                ),
            ),
        ),
    ),
)


PRESETS: dict[str, Preset] = {p.key: p for p in (ALIGNMMBENCH, MLLM_BENCH, MMBENCH, TOUCHSTONE)}
